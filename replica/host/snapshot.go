package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/raft/v3/raftpb"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/cleavedb/cleave/store"
)

// Snapshots. A leader whose log no longer holds what a follower needs (a replica added after
// a truncation, one that was away) sends it a snapshot: raft's message carries only where it
// stands (index, term, configuration), and the state travels first, out of band: a Pebble
// checkpoint of the leader's store (its applied index is the snapshot's or later), whose files
// go in chunks of SnapshotCommand to the follower's node, which writes them into a staging
// directory, syncs them, marks them complete and only then steps raft's message. When raft
// hands the snapshot to the follower's group, it installs the staged store in place of its own
// (InstallSnapshot below) before the log records the snapshot; entries at or below the staged
// store's applied index are then skipped, so a state newer than the snapshot's index is fine.
//
// The swap is two renames: live → <dir>.old, staged → live. A crash between them is finished
// at the next start (finishSwap); a partial staging directory is deleted.

// SnapshotCommand is the internal command that carries a snapshot's chunks: {_cleaveRaftSnapshot:
// group, to: replica, phase: "begin" | "file" | "end", file, offset, data, msg}.
const SnapshotCommand = "_cleaveRaftSnapshot"

const (
	snapChunk    = 4 << 20
	snapTimeout  = 2 * time.Minute
	snapComplete = "SNAPSHOT-COMPLETE"
)

// replicaSM is a hosted replica's state machine for its group: its current store.
type replicaSM struct {
	h *Host
	r *hosted
}

func (s replicaSM) ApplyReplicated(index, term uint64, data []byte) error {
	return s.r.store().ApplyReplicated(index, term, data)
}

func (s replicaSM) ReplicaApplied() (uint64, uint64, error) { return s.r.store().ReplicaApplied() }

func (s replicaSM) SyncApplied() (uint64, error) { return s.r.store().SyncApplied() }

// InstallSnapshot swaps the replica's store for the staged one.
func (s replicaSM) InstallSnapshot(meta *raftpb.SnapshotMetadata) error {
	h, r := s.h, s.r
	live, staged := h.replicaDir(r.shard), h.replicaDir(r.shard)+".snap"
	if _, err := os.Stat(filepath.Join(staged, snapComplete)); err != nil {
		return fmt.Errorf("no complete snapshot staged for shard %d: %w", r.shard, err)
	}
	old := r.store()
	if err := old.Close(); err != nil && !errors.Is(err, store.ErrClosed) {
		return err
	}
	if err := os.RemoveAll(live + ".old"); err != nil {
		return err
	}
	if err := os.Rename(live, live+".old"); err != nil {
		return err
	}
	if err := h.finishSwap(r.shard); err != nil {
		return err
	}
	db, err := h.opts.OpenStore(live, r.shard)
	if err != nil {
		return err
	}
	db.SetProposer(r.g)
	r.db.Store(db)
	applied, _, err := db.ReplicaApplied()
	if err == nil && applied < meta.GetIndex() {
		err = fmt.Errorf("the staged store applied %d, the snapshot is at %d", applied, meta.GetIndex())
	}
	h.log.Info("installed a snapshot of a shard", zap.Int("shard", r.shard), zap.Uint64("index", meta.GetIndex()),
		zap.Uint64("applied", applied))
	return err
}

// finishSwap completes a swap a crash interrupted (no live store, a complete staged one) and
// deletes what a swap or a transfer left.
func (h *Host) finishSwap(id int) error {
	live := h.replicaDir(id)
	staged := live + ".snap"
	if _, err := os.Stat(live); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(staged, snapComplete)); err == nil {
			if err := os.Rename(staged, live); err != nil {
				return err
			}
			if err := syncDir(filepath.Dir(live)); err != nil {
				return err
			}
		}
	}
	_ = os.Remove(filepath.Join(live, snapComplete))
	return errors.Join(os.RemoveAll(staged), os.RemoveAll(live+".old"))
}

// sendSnapshot ships the state of group's replica here to replica m.To, then m itself, and
// tells the group how it went.
func (h *Host) sendSnapshot(group uint64, m *raftpb.Message) {
	h.mu.Lock()
	r := h.hosted[int(group)]
	h.mu.Unlock()
	node := h.nodeOfReplica(m.GetTo())
	if r == nil || r.g == nil {
		return
	}
	err := h.shipSnapshot(r, node, m)
	if err != nil && h.ctx.Err() == nil {
		h.log.Warn("cannot send a snapshot", zap.Int("shard", r.shard), zap.Uint64("to", m.GetTo()), zap.String("node", node), zap.Error(err))
	}
	r.g.ReportSnapshot(m.GetTo(), err != nil)
}

// shipSnapshot checkpoints r's store and sends its files and m to node.
func (h *Host) shipSnapshot(r *hosted, node string, m *raftpb.Message) error {
	addr := h.address(node)
	if addr == "" || h.opts.Call == nil {
		return fmt.Errorf("node %q is not reachable", node)
	}
	dir := filepath.Join(h.opts.Dir, "snapshots", fmt.Sprintf("%d-%d-%d", r.shard, m.GetTo(), time.Now().UnixNano()))
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := r.store().Checkpoint(dir); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(h.ctx, snapTimeout)
	defer cancel()
	send := func(phase string, extra func(*bsoncore.DocumentBuilder)) error {
		b := bsoncore.NewDocumentBuilder().AppendInt64(SnapshotCommand, int64(r.shard)).
			AppendInt64("to", int64(m.GetTo())).AppendString("phase", phase)
		if extra != nil {
			extra(b)
		}
		_, err := h.opts.Call(ctx, addr, b.AppendString("$db", "admin").Build())
		return err
	}
	if err := send("begin", nil); err != nil {
		return err
	}
	files, bytes := 0, int64(0)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files++
		n, err := sendFile(path, func(off int64, data []byte) error {
			return send("file", func(b *bsoncore.DocumentBuilder) {
				b.AppendString("file", rel).AppendInt64("offset", off).AppendBinary("data", 0, data)
			})
		})
		bytes += n
		return err
	})
	if err != nil {
		return err
	}
	msg, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	if err := send("end", func(b *bsoncore.DocumentBuilder) { b.AppendBinary("msg", 0, msg) }); err != nil {
		return err
	}
	h.log.Info("sent a snapshot", zap.Int("shard", r.shard), zap.Uint64("to", m.GetTo()), zap.String("node", node),
		zap.Int("files", files), zap.Int64("bytes", bytes))
	return nil
}

// sendFile calls send with the chunks of the file at path (an empty file: one empty chunk).
func sendFile(path string, send func(off int64, data []byte) error) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, snapChunk)
	var off int64
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 || off == 0 {
			if serr := send(off, buf[:n]); serr != nil {
				return off, serr
			}
			off += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

// ReceiveSnapshot takes one chunk of a snapshot for this node's replica to of shard group
// (the SnapshotCommand's handler): begin empties the staging directory, file writes data at
// offset, end syncs the files, marks them complete and steps raft's message msg.
func (h *Host) ReceiveSnapshot(group, to uint64, phase, file string, offset int64, data, msg []byte) error {
	h.mu.Lock()
	r := h.hosted[int(group)]
	h.mu.Unlock()
	if r == nil || r.id != to {
		return fmt.Errorf("this node holds no replica %d of shard %d", to, group)
	}
	staged := h.replicaDir(int(group)) + ".snap"
	switch phase {
	case "begin":
		if err := os.RemoveAll(staged); err != nil {
			return err
		}
		return os.MkdirAll(staged, 0o755)
	case "file":
		path := filepath.Join(staged, filepath.Clean("/"+file))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		_, err = f.WriteAt(data, offset)
		return errors.Join(err, f.Sync(), f.Close())
	case "end":
		if err := os.WriteFile(filepath.Join(staged, snapComplete), []byte(strconv.Itoa(len(msg))), 0o644); err != nil {
			return err
		}
		if err := errors.Join(syncDir(staged), syncDir(filepath.Dir(staged))); err != nil {
			return err
		}
		m := new(raftpb.Message)
		if err := proto.Unmarshal(msg, m); err != nil {
			return fmt.Errorf("corrupt snapshot message: %w", err)
		}
		r.g.Step(m)
		return nil
	}
	return fmt.Errorf("unknown snapshot phase %q", phase)
}

// syncDir syncs directory dir's entries.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
