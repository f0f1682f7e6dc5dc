package sharding

import (
	"context"
	"fmt"
	"sync"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
)

// moveFence keeps the other nodes' index fills on this node (_cleaveShardIndexes) and the
// moves between nodes that involve this node's shards apart: a fill waits until no such move
// is in flight, and holds new ones off meanwhile, so that it never meets a copy this node
// holds without owning it yet (nor a range leaving while it is indexed). Fills do not
// exclude each other, and neither do moves. (A build this node runs holds its DDL lock, which
// both ends of a move hold too.)
type moveFence struct {
	mu      sync.Mutex
	moves   int // moves in flight
	fills   int // fills running or waiting
	changed chan struct{}
}

// wait waits, with f.mu held (released meanwhile), until busy() is false or ctx ends.
func (f *moveFence) wait(ctx context.Context, busy func() bool) error {
	for busy() {
		if f.changed == nil {
			f.changed = make(chan struct{})
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			f.mu.Lock()
			return ctx.Err()
		}
		f.mu.Lock()
	}
	return nil
}

// signal wakes the waiters, with f.mu held.
func (f *moveFence) signal() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// enterMove waits until no fill runs or waits, then counts a move in flight until its
// release is called.
func (f *moveFence) enterMove(ctx context.Context) (release func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.wait(ctx, func() bool { return f.fills > 0 }); err != nil {
		return nil, err
	}
	f.moves++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.moves--
		f.signal()
	}, nil
}

// enterFill holds new moves off and waits until none is in flight; the fill runs until its
// release is called.
func (f *moveFence) enterFill(ctx context.Context) (release func(), err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fills++
	done := func() {
		f.fills--
		f.signal()
	}
	if err := f.wait(ctx, func() bool { return f.moves > 0 }); err != nil {
		done()
		return nil, err
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		done()
	}, nil
}

// FenceMoves waits until no move between nodes involving this node's shards is in flight and
// holds new ones off until release is called: another node's index build or drop runs its
// part here meanwhile (_cleaveShardIndexes).
func (m *Manager) FenceMoves(ctx context.Context) (release func(), err error) {
	return m.fence.enterFill(ctx)
}

// enterMoveFence counts a move of this node's shard s in flight (enterMove), waiting at most
// beginDDLWait for other nodes' fills here; the move then fails and is tried again later.
func (m *Manager) enterMoveFence(s int) (release func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), beginDDLWait)
	defer cancel()
	release, err = m.fence.enterMove(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is busy with an index build", shard.ErrStaleAction, catalog.ShardName(s))
	}
	return release, nil
}
