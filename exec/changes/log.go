package changes

import (
	"context"
	"slices"

	"github.com/cleavedb/cleave/store"
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
	err := l.db.ReadChanges(after, b.Frontier, func(p store.ChangePos, rec []byte) bool {
		if len(b.Records) >= limit && p.TS != last {
			b.Frontier = last
			return false
		}
		b.Records = append(b.Records, Record{Pos: p, Rec: slices.Clone(rec)})
		last = p.TS
		return true
	})
	return b, err
}
