package server

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// fsyncLock is the state of fsync's lock: while its count is above zero the server's
// writers are held (every key-lock stripe), reads go on; each {fsync: 1, lock: true} adds
// one, each fsyncUnlock removes one, and the last lets the writers go.
type fsyncLock struct {
	mu      sync.Mutex
	count   int64
	release func()
}

// addFsyncCommands registers fsync and fsyncUnlock (mongosh's db.fsyncLock() and
// db.fsyncUnlock()).
func (h *Handlers) addFsyncCommands(add func(*command.Command)) {
	add(&command.Command{Name: "fsync", Run: h.fsync, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "flush every shard's memtables to its files; with lock: true, hold every write until fsyncUnlock"})
	add(&command.Command{Name: "fsyncUnlock", Run: h.fsyncUnlock, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "release one fsync lock; the last lets writes go on"})
}

// fsync answers {fsync: 1, lock?: bool, async?: bool}: every shard of this process flushes
// what its memtables hold to its files (acknowledged writes are in the write-ahead log
// already), and with lock: true the server then holds every write until fsyncUnlock.
func (h *Handlers) fsync(ctx context.Context, r *command.Request) error {
	var lock bool
	err := args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "lock":
			lock, err = args.Bool(r.Name, key, v)
		case "async", "forBackup", "fsyncLockAcquisitionTimeoutMillis":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if lock && h.Storage.Cluster != nil {
		return mongoerr.New(mongoerr.IllegalOperation, "fsync with lock: true is not supported by a cleave cluster: each node holds only its own writers")
	}
	n, err := h.FlushShards()
	if err != nil {
		return mongoerr.New(mongoerr.InternalError, "fsync: %v", err)
	}
	out := bsoncore.AppendInt32Element(r.Out, "numFiles", int32(n))
	if lock {
		count, err := h.fsyncLock.lock(ctx, h)
		if err != nil {
			return err
		}
		out = bsoncore.AppendStringElement(out, "info", "now locked against writes, use db.fsyncUnlock() to unlock")
		out = bsoncore.AppendInt64Element(out, "lockCount", count)
		out = bsoncore.AppendStringElement(out, "seeAlso", "http://dochub.mongodb.org/core/fsynccommand")
	}
	r.Out = out
	return nil
}

// lock adds one to the lock's count, holding the writers first when it is the first.
func (l *fsyncLock) lock(ctx context.Context, h *Handlers) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		release, err := h.Cat.Locks().LockAllCtx(ctx)
		if err != nil {
			return 0, command.InterruptError(ctx, err)
		}
		l.release = release
		h.Log.Warn("fsync lock: writes are held until fsyncUnlock")
	}
	l.count++
	return l.count, nil
}

// fsyncUnlock answers {fsyncUnlock: 1}: one lock fewer, and writes go on after the last.
func (h *Handlers) fsyncUnlock(_ context.Context, r *command.Request) error {
	l := &h.fsyncLock
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return mongoerr.New(mongoerr.IllegalOperation, "fsyncUnlock called when not locked")
	}
	l.count--
	if l.count == 0 {
		l.release()
		l.release = nil
		h.Log.Info("fsync lock released: writes go on", zap.Int64("lockCount", 0))
	}
	out := bsoncore.AppendStringElement(r.Out, "info", "fsyncUnlock completed")
	r.Out = bsoncore.AppendInt64Element(out, "lockCount", l.count)
	return nil
}

// ReleaseFsyncLock lets the writers go at shutdown whatever the lock's count: the writes
// held finish (or are interrupted) and the partition manager's round in progress, which
// shutdown waits for, can take its key locks.
func (h *Handlers) ReleaseFsyncLock() {
	l := &h.fsyncLock
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return
	}
	l.count = 0
	l.release()
	l.release = nil
	h.Log.Info("fsync lock released at shutdown")
}
