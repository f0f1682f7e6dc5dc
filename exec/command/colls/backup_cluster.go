package colls

import (
	"context"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/backup"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A cluster's backup (docs/backup.md): the node that runs the backup command coordinates
// (backup.RunCluster), and every node, itself included, takes its part through
// {_cleaveBackup: "prepare"|"checkpoint"|"release", id, clusterTime, dir} (backup.Node).

// backupInternalCmd is the internal command of a node's part in a cluster backup.
const backupInternalCmd = "_cleaveBackup"

// backupCluster is what a cluster backup needs of the node's cluster (cmd/cleave's view).
type backupCluster interface {
	// BackupMembers returns every node up: name → advertised address.
	BackupMembers() map[string]string
	// BackupMetadata reads the cluster's metadata from etcd.
	BackupMetadata(ctx context.Context) (*store.ClusterMetadata, error)
}

// addBackupInternal registers _cleaveBackup.
func (h *Handlers) addBackupInternal(add func(*command.Command)) {
	add(&command.Command{Name: backupInternalCmd, Run: h.backupPart, Action: auth.ActionInternal,
		Help: "internal: this node's part in a cluster backup", AdminOnly: true})
}

// backupClusterRun runs a backup of the whole cluster into dir, incremental from the
// cluster backup in from unless it is "".
func (h *Handlers) backupClusterRun(ctx context.Context, r *command.Request, dir, from string) (*backup.Result, error) {
	bc, ok := h.Storage.Cluster.(backupCluster)
	if !ok || h.Remote == nil {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "backup: this node cannot reach the other nodes of its cluster")
	}
	if h.Storage.Replicas == nil {
		// A single copy's store holds its node's mirror of the catalog, which a restore
		// into a new etcd cannot take over.
		return nil, mongoerr.New(mongoerr.IllegalOperation, "backup is not supported in a cluster of single-copy shards (--replicas 1) yet")
	}
	members := bc.BackupMembers()
	names := make([]string, 0, len(members))
	for n := range members {
		names = append(names, n)
	}
	slices.Sort(names)
	peers := make([]backup.Peer, len(names))
	for i, n := range names {
		peers[i] = remotePeer{h: h, name: n, addr: members[n]}
	}
	shards := make([]int, len(h.Cat.Shards()))
	for i := range shards {
		shards[i] = i
	}
	replicas := h.Storage.Replicas.Copies()
	return backup.RunCluster(ctx, backup.ClusterOptions{Dir: dir, Peers: peers, Shards: shards, Cat: h.Cat, IncrementalFrom: from,
		Metadata: bc.BackupMetadata, Nodes: names, Replicas: replicas, ServerVersion: command.ServerVersion, Log: r.Conn.Log})
}

// backupPart runs this node's step of a cluster backup.
func (h *Handlers) backupPart(ctx context.Context, r *command.Request) error {
	step, _ := r.Body.Lookup(backupInternalCmd).StringValueOK()
	id, _ := r.Body.Lookup("id").StringValueOK()
	if id == "" {
		return mongoerr.New(mongoerr.BadValue, "%s: id is missing", backupInternalCmd)
	}
	switch step {
	case "prepare":
		tick, err := h.BackupNode.Prepare(ctx, id, backup.DrainTimeout)
		if err != nil {
			return err
		}
		r.Out = bsoncore.AppendTimestampElement(r.Out, "tick", uint32(tick>>32), uint32(tick))
	case "checkpoint":
		t, i, _ := r.Body.Lookup("clusterTime").TimestampOK()
		dir, _ := r.Body.Lookup("dir").StringValueOK()
		ids, err := h.BackupNode.Checkpoint(ctx, id, uint64(t)<<32|uint64(i), dir, backup.DrainTimeout)
		if err != nil {
			return err
		}
		r.Out = appendShardIDs(r.Out, ids)
	case "release":
		r.Out = bsoncore.AppendInt64Element(r.Out, "pauseMicros", h.BackupNode.Release(id).Microseconds())
	case "digest":
		dir, _ := r.Body.Lookup("dir").StringValueOK()
		parts, err := backup.Digest(dir, readShardIDs(r.Body))
		if err != nil {
			return err
		}
		r.Out = appendShardParts(r.Out, parts)
	default:
		return mongoerr.New(mongoerr.BadValue, "%s: unknown step %q", backupInternalCmd, step)
	}
	return nil
}

// appendShardIDs appends the shards a node checkpointed.
func appendShardIDs(dst []byte, ids []int) []byte {
	idx, dst := bsoncore.AppendArrayElementStart(dst, "ids")
	for i, id := range ids {
		dst = bsoncore.AppendInt32Element(dst, strconv.Itoa(i), int32(id))
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// readShardIDs reads what appendShardIDs wrote.
func readShardIDs(doc bsoncore.Document) []int {
	vals, _ := doc.Lookup("ids").Array().Values()
	ids := make([]int, 0, len(vals))
	for _, v := range vals {
		id, _ := v.Int32OK()
		ids = append(ids, int(id))
	}
	return ids
}

// appendShardParts appends the shards a node checkpointed, with their digests.
func appendShardParts(dst []byte, parts []backup.ShardPart) []byte {
	idx, dst := bsoncore.AppendArrayElementStart(dst, "shards")
	for i, p := range parts {
		var sidx int32
		sidx, dst = bsoncore.AppendDocumentElementStart(dst, strconv.Itoa(i))
		dst = bsoncore.AppendInt32Element(dst, "id", int32(p.ID))
		dst = bsoncore.AppendInt64Element(dst, "keys", p.Digest.Keys)
		dst = bsoncore.AppendInt64Element(dst, "sum", int64(p.Digest.Sum))
		var cidx int32
		cidx, dst = bsoncore.AppendArrayElementStart(dst, "colls")
		k := 0
		for cid, c := range p.Digest.Colls {
			var didx int32
			didx, dst = bsoncore.AppendDocumentElementStart(dst, strconv.Itoa(k))
			dst = bsoncore.AppendInt64Element(dst, "id", int64(cid))
			dst = bsoncore.AppendInt64Element(dst, "count", c.Count)
			dst = bsoncore.AppendInt64Element(dst, "sum", int64(c.Sum))
			dst, _ = bsoncore.AppendDocumentEnd(dst, didx)
			k++
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, cidx)
		dst, _ = bsoncore.AppendDocumentEnd(dst, sidx)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, idx)
	return dst
}

// readShardParts reads what appendShardParts wrote.
func readShardParts(reply bsoncore.Document) ([]backup.ShardPart, error) {
	vals, err := reply.Lookup("shards").Array().Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "%s: invalid shards in a node's reply", backupInternalCmd)
	}
	parts := make([]backup.ShardPart, 0, len(vals))
	for _, v := range vals {
		d := v.Document()
		id, _ := d.Lookup("id").Int32OK()
		keys, _ := d.Lookup("keys").Int64OK()
		sum, _ := d.Lookup("sum").Int64OK()
		p := backup.ShardPart{ID: int(id), Digest: store.DirDigest{Keys: keys, Sum: uint64(sum), Colls: map[store.CollID]store.CollDigest{}}}
		cvals, _ := d.Lookup("colls").Array().Values()
		for _, cv := range cvals {
			c := cv.Document()
			cid, _ := c.Lookup("id").Int64OK()
			n, _ := c.Lookup("count").Int64OK()
			s, _ := c.Lookup("sum").Int64OK()
			p.Digest.Colls[store.CollID(cid)] = store.CollDigest{Count: n, Sum: uint64(s)}
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// remotePeer is a node of the cluster reached through _cleaveBackup (this node included).
type remotePeer struct {
	h          *Handlers
	name, addr string
}

// Name implements backup.Peer.
func (p remotePeer) Name() string { return p.name }

// call runs step of backup id on the node, with extra fields.
func (p remotePeer) call(ctx context.Context, step, id string, extra func(*bsoncore.DocumentBuilder)) (bsoncore.Document, error) {
	b := bsoncore.NewDocumentBuilder().AppendString(backupInternalCmd, step).AppendString("id", id)
	if extra != nil {
		extra(b)
	}
	return p.h.Remote.NodeCommand(ctx, p.addr, b.AppendString("$db", "admin").Build())
}

// Prepare implements backup.Peer.
func (p remotePeer) Prepare(ctx context.Context, id string) (uint64, error) {
	reply, err := p.call(ctx, "prepare", id, nil)
	if err != nil {
		return 0, err
	}
	t, i, _ := reply.Lookup("tick").TimestampOK()
	return uint64(t)<<32 | uint64(i), nil
}

// Checkpoint implements backup.Peer.
func (p remotePeer) Checkpoint(ctx context.Context, id string, clusterTime uint64, dir string) ([]int, error) {
	reply, err := p.call(ctx, "checkpoint", id, func(b *bsoncore.DocumentBuilder) {
		b.AppendTimestamp("clusterTime", uint32(clusterTime>>32), uint32(clusterTime)).AppendString("dir", dir)
	})
	if err != nil {
		return nil, err
	}
	return readShardIDs(reply), nil
}

// Release implements backup.Peer.
func (p remotePeer) Release(ctx context.Context, id string) (time.Duration, error) {
	reply, err := p.call(ctx, "release", id, nil)
	if err != nil {
		return 0, err
	}
	us, _ := reply.Lookup("pauseMicros").Int64OK()
	return time.Duration(us) * time.Microsecond, nil
}

// Digest implements backup.Peer.
func (p remotePeer) Digest(ctx context.Context, dir string, ids []int) ([]backup.ShardPart, error) {
	reply, err := p.call(ctx, "digest", "-", func(b *bsoncore.DocumentBuilder) {
		ab := bsoncore.NewArrayBuilder()
		for _, id := range ids {
			ab.AppendInt32(int32(id))
		}
		b.AppendString("dir", dir).AppendArray("ids", ab.Build())
	})
	if err != nil {
		return nil, err
	}
	return readShardParts(reply)
}
