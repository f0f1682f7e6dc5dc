package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/store"
)

// A cluster's backup holds its metadata (Metadata): the keys that outlive its nodes — the
// catalog, the shards' placement, the replica-id counter —, not the nodes' registrations,
// the leader records or the manager election, which belong to running nodes. A restore
// writes them into the etcd of a new cluster (RestoreMetadata), each shard becoming a group
// of one copy on the node that receives its data, whose leader then adds the other copies.

// maxTxnOps is how many keys one etcd transaction of a restore writes (etcd refuses more
// than 128 operations per transaction by default).
const maxTxnOps = 100

// Metadata reads the cluster's metadata at one etcd revision.
func (n *Node) Metadata(ctx context.Context) (*store.ClusterMetadata, error) {
	prefix := n.opts.Prefix + "/"
	resp, err := n.cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster's metadata: %w", err)
	}
	md := &store.ClusterMetadata{Revision: resp.Header.Revision}
	for _, kv := range resp.Kvs {
		rel := strings.TrimPrefix(string(kv.Key), prefix)
		if !lasting(rel) {
			continue
		}
		if rel == "catalog/rev" {
			md.CatalogRevision = kv.ModRevision
		}
		md.KVs = append(md.KVs, store.ClusterKV{Key: rel, Value: kv.Value})
	}
	return md, nil
}

// lasting reports whether the key rel (relative to the prefix) outlives the nodes.
func lasting(rel string) bool {
	switch {
	case strings.HasPrefix(rel, "nodes/"), strings.HasPrefix(rel, "manager/"), strings.HasSuffix(rel, leaderSuffix):
		return false
	}
	return true
}

// RestoreOptions says where RestoreMetadata writes a backup's metadata.
type RestoreOptions struct {
	// Endpoints and Prefix are the new cluster's etcd and prefix (default "/cleave").
	Endpoints []string
	Prefix    string
	// Owners names the node of the new cluster each shard of the backup goes to.
	Owners map[int]string
}

// RestoreMetadata writes md, a backup's metadata, into the etcd of a new cluster: nothing may
// be under o.Prefix yet. The catalog goes in as it was; each shard's placement names its node
// in o.Owners, with one copy, on that node, under a new replica id (the copies the backup
// came from are gone), so that the node starts the shard as a new group of one and its leader
// adds the others. It returns the new placement.
func RestoreMetadata(ctx context.Context, o RestoreOptions, md *store.ClusterMetadata, log *zap.Logger) (map[int]Placement, error) {
	opts := Options{Endpoints: o.Endpoints, Prefix: o.Prefix}
	opts.EnsureDefaults()
	cli, err := clientv3.New(clientv3.Config{Endpoints: opts.Endpoints, DialTimeout: opts.DialTimeout,
		Logger: log.Named("etcd").WithOptions(zap.IncreaseLevel(zap.WarnLevel))})
	if err != nil {
		return nil, fmt.Errorf("cannot reach etcd at %s: %w", strings.Join(opts.Endpoints, ","), err)
	}
	defer func() { _ = cli.Close() }()
	resp, err := cli.Get(ctx, opts.Prefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, fmt.Errorf("cannot read etcd at %s: %w", strings.Join(opts.Endpoints, ","), err)
	}
	if resp.Count > 0 {
		return nil, fmt.Errorf("etcd already holds %d keys under %s: a restore needs a new cluster (another --etcd-prefix, or an empty etcd)", resp.Count, opts.Prefix)
	}
	kvs, placed, err := restoredKVs(md, o.Owners)
	if err != nil {
		return nil, err
	}
	for len(kvs) > 0 {
		n := min(len(kvs), maxTxnOps)
		ops := make([]clientv3.Op, n)
		for i, kv := range kvs[:n] {
			ops[i] = clientv3.OpPut(opts.Prefix+"/"+kv.Key, string(kv.Value))
		}
		if _, err := cli.Txn(ctx).Then(ops...).Commit(); err != nil {
			return nil, fmt.Errorf("cannot write the cluster's metadata: %w", err)
		}
		kvs = kvs[n:]
	}
	return placed, nil
}

// restoredKVs returns the keys RestoreMetadata writes, the catalog's revision key last (a
// restore cut short is then seen as a catalog never written), and the new placement.
func restoredKVs(md *store.ClusterMetadata, owners map[int]string) ([]store.ClusterKV, map[int]Placement, error) {
	var out []store.ClusterKV
	var rev *store.ClusterKV
	nextReplica := uint64(0)
	old := map[int]Placement{}
	for _, kv := range md.KVs {
		switch {
		case kv.Key == "catalog/rev":
			rev = &kv
		case kv.Key == "replica-ids":
			v, err := strconv.ParseUint(string(kv.Value), 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("corrupt replica id counter %q", kv.Value)
			}
			nextReplica = max(nextReplica, v)
		case strings.HasPrefix(kv.Key, "shards/"):
			id, err := strconv.Atoi(strings.TrimPrefix(kv.Key, "shards/"))
			var p Placement
			if err != nil || json.Unmarshal(kv.Value, &p) != nil {
				return nil, nil, fmt.Errorf("corrupt shard record %q", kv.Key)
			}
			old[id] = p
		default:
			out = append(out, kv)
		}
	}
	placed := map[int]Placement{}
	ids := make([]int, 0, len(old))
	for id := range old {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		node, ok := owners[id]
		if !ok {
			return nil, nil, fmt.Errorf("shard %d of the backup has no node to go to", id)
		}
		nextReplica++
		p := Placement{Node: node, Draining: old[id].Draining, Replicas: []Replica{{ID: nextReplica, Node: node}}}
		placed[id] = p
		v, _ := json.Marshal(p)
		out = append(out, store.ClusterKV{Key: "shards/" + strconv.Itoa(id), Value: v})
	}
	out = append(out, store.ClusterKV{Key: "replica-ids", Value: []byte(strconv.FormatUint(nextReplica, 10))})
	if rev != nil {
		out = append(out, *rev)
	}
	return out, placed, nil
}

// RestoreTimeout bounds a restore's etcd work.
const RestoreTimeout = time.Minute
