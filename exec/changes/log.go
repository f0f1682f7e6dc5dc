package changes

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Log is one shard's change log as a stream reads it: in this process (LocalLog) or on the
// node that owns the shard (RemoteLog).
type Log interface {
	// Read returns the records after position after, in order, at most about limit of them
	// (more when one batch holds more: a read ends at a time boundary), with the shard's
	// frontier: every record at or before it was returned, or comes after the last returned.
	Read(ctx context.Context, after store.ChangePos, limit int) (Batch, error)
}

// Batch is what a Read returns.
type Batch struct {
	Records []Record
	// Frontier is the time up to which the shard's log was read: the shard's visible time,
	// or the last record's when the read stopped at limit.
	Frontier uint64
	// Trimmed is the time before which the shard's log was trimmed (retention).
	Trimmed uint64
}

// Record is one change record of a shard's log.
type Record struct {
	Pos store.ChangePos
	Rec []byte
}

// LocalLog returns the log of a shard of this process.
func LocalLog(db *store.DB) Log { return localLog{db} }

// localLog is LocalLog's.
type localLog struct{ db *store.DB }

// Read implements Log.
func (l localLog) Read(ctx context.Context, after store.ChangePos, limit int) (Batch, error) {
	b := Batch{Frontier: l.db.ChangesVisible(), Trimmed: l.db.ChangesTrimmed()}
	if err := ctx.Err(); err != nil {
		return b, err
	}
	var last uint64
	err := l.db.ReadChanges(after, b.Frontier, func(p store.ChangePos, rec, doc []byte) bool {
		if len(b.Records) >= limit && p.TS != last {
			b.Frontier = last
			return false
		}
		r := Record{Pos: p}
		if doc != nil {
			r.Rec = WithDoc(make([]byte, 0, len(rec)+len(doc)+8), rec, doc)
		} else {
			r.Rec = slices.Clone(rec)
		}
		b.Records = append(b.Records, r)
		last = p.TS
		return true
	})
	return b, err
}

// FollowLog returns the log of the cluster's shard as this node reaches it at each read: its
// own copy while cat says that this node serves the shard (LeaderLog), else through p (nil on
// a single node) from the node that does. A stream lives longer than a replicated shard's
// leadership: a log fixed when the stream opened would go on reading a copy that no longer
// leads, whose frontier (this node's clock) runs ahead of the records its successor stamps and
// replicates to it later, and the stream would step over them.
func FollowLog(cat *catalog.Catalog, p catalog.Peers, shard int) Log {
	return followLog{cat: cat, p: p, shard: shard}
}

// followLog is FollowLog's.
type followLog struct {
	cat   *catalog.Catalog
	p     catalog.Peers
	shard int
}

// Read implements Log.
func (l followLog) Read(ctx context.Context, after store.ChangePos, limit int) (Batch, error) {
	if shards := l.cat.Shards(); l.shard < len(shards) {
		if db, ok := catalog.LocalDB(shards[l.shard]); ok {
			b, err := LeaderLog(db).Read(ctx, after, limit)
			if err == nil || l.p == nil || ctx.Err() != nil || !errors.Is(err, errNotLeader) {
				return b, err
			}
			// It stopped leading since cat was last updated: read through the leader.
		}
	}
	if l.p == nil {
		return Batch{}, mongoerr.New(mongoerr.StaleConfig, "%s is not on this node", catalog.ShardName(l.shard))
	}
	return RemoteLog(l.p, l.shard).Read(ctx, after, limit)
}

// LeaderLog returns the log of db, a shard this node serves: LocalLog's, with, for a
// replicated copy, the copy's read barrier passed after each read, so that the frontier it
// reports is its group leader's (a deposed leader that does not know it yet gets no quorum).
// A copy that does not lead fails the read with NotWritablePrimary (wrapping errNotLeader).
func LeaderLog(db *store.DB) Log { return leaderLog{db} }

// leaderLog is LeaderLog's.
type leaderLog struct{ db *store.DB }

// errNotLeader marks a read of a replicated copy that does not lead its group.
var errNotLeader = errors.New("the copy does not lead its group")

// Read implements Log.
func (l leaderLog) Read(ctx context.Context, after store.ChangePos, limit int) (Batch, error) {
	b, err := localLog(l).Read(ctx, after, limit)
	if err != nil || !l.db.Replicated() {
		return b, err
	}
	if err := l.db.ReadBarrier(ctx); err != nil {
		if ctx.Err() != nil {
			return Batch{}, err
		}
		return Batch{}, mongoerr.Wrap(fmt.Errorf("%w: %w", errNotLeader, err), mongoerr.NotWritablePrimary,
			"cannot read the change log of a shard whose copy here does not lead it")
	}
	return b, nil
}
