package cluster

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// mirror keeps an in-memory copy of the keys under one etcd prefix: a Get, then a watch from
// the revision after it; when the watch falls behind the log's compaction it starts over
// with a new Get. Readers never wait on etcd.
type mirror struct {
	cli    *clientv3.Client
	prefix string
	log    *zap.Logger
	mu     struct {
		sync.Mutex
		kvs map[string][]byte // key without the prefix → value
		rev int64
		// changed is closed (and replaced) at every change, and ver counts the changes.
		changed chan struct{}
		ver     uint64
	}
}

// version returns a number that changes with every change of the copy.
func (m *mirror) version() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.ver
}

// newMirror loads prefix and returns its mirror; run keeps it current.
func newMirror(ctx context.Context, cli *clientv3.Client, prefix string, log *zap.Logger) (*mirror, error) {
	m := &mirror{cli: cli, prefix: prefix, log: log}
	m.mu.changed = make(chan struct{})
	if err := m.load(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// load replaces the copy with the prefix's current keys.
func (m *mirror) load(ctx context.Context) error {
	resp, err := m.cli.Get(ctx, m.prefix, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	kvs := make(map[string][]byte, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		kvs[strings.TrimPrefix(string(kv.Key), m.prefix)] = kv.Value
	}
	m.mu.Lock()
	m.mu.kvs, m.mu.rev = kvs, resp.Header.Revision
	m.notify()
	m.mu.Unlock()
	return nil
}

// notify wakes the waiters of a change; the caller holds m.mu.
func (m *mirror) notify() {
	m.mu.ver++
	close(m.mu.changed)
	m.mu.changed = make(chan struct{})
}

// run follows the prefix's changes until ctx ends.
func (m *mirror) run(ctx context.Context) {
	for ctx.Err() == nil {
		m.mu.Lock()
		from := m.mu.rev + 1
		m.mu.Unlock()
		err := m.follow(ctx, from)
		if ctx.Err() != nil {
			return
		}
		m.log.Warn("etcd watch ended; reloading", zap.String("prefix", m.prefix), zap.Error(err))
		for ctx.Err() == nil {
			if err := m.load(ctx); err == nil {
				break
			}
			sleep(ctx, 200*time.Millisecond)
		}
	}
}

// follow applies the watch's events from revision from until the watch fails.
func (m *mirror) follow(ctx context.Context, from int64) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range m.cli.Watch(wctx, m.prefix, clientv3.WithPrefix(), clientv3.WithRev(from)) {
		if err := resp.Err(); err != nil {
			return err
		}
		m.mu.Lock()
		for _, ev := range resp.Events {
			k := strings.TrimPrefix(string(ev.Kv.Key), m.prefix)
			if ev.Type == clientv3.EventTypeDelete {
				delete(m.mu.kvs, k)
			} else {
				m.mu.kvs[k] = ev.Kv.Value
			}
		}
		m.mu.rev = max(m.mu.rev, resp.Header.Revision)
		m.notify()
		m.mu.Unlock()
	}
	return errWatchClosed
}

// snapshot returns a copy of the keys and values (values shared: never modify them).
func (m *mirror) snapshot() map[string][]byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string][]byte, len(m.mu.kvs))
	for k, v := range m.mu.kvs {
		out[k] = v
	}
	return out
}

// changed returns a channel closed at the next change.
func (m *mirror) changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.changed
}

// errWatchClosed reports a watch channel that closed without an error (etcd unreachable, or
// its leader lost under WithRequireLeader).
var errWatchClosed = errors.New("etcd watch closed")

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
