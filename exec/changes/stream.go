package changes

import (
	"bytes"
	"context"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Source is a shard whose change log a stream reads.
type Source struct {
	Shard uint32
	Log   Log
}

// Scope is what a stream watches: a collection, a database (Coll ""), or every database of
// the deployment (DB "").
type Scope struct{ DB, Coll string }

// Options are a stream's $changeStream options, parsed (options.go).
type Options struct {
	Scope
	FullDocument       string // "default", "updateLookup", "whenAvailable", "required"
	BeforeChange       string // fullDocumentBeforeChange: "off", "whenAvailable", "required"
	ShowExpandedEvents bool
	// Start is the position the stream reads after (resumeAfter, startAfter, or the time the
	// stream opened, startAtOperationTime).
	Start Token
	// Resumed reports that Start came from the client (a resume point to check).
	Resumed bool
	// Lookup finds the current version of an update's document for updateLookup: the
	// document of db.coll (whose UUID is uuid) matching documentKey key, nil if none.
	Lookup func(ctx context.Context, db, coll string, uuid []byte, key bsoncore.Document) (bsoncore.Document, error)
}

// readAhead is how many records a fill reads from one shard (more when one batch of a shard
// holds more: a fill always ends at a time boundary).
const readAhead = 256

// Reader is the stream of change events of the shards' logs, merged in (time, shard, position)
// order, from a start position: a stream.Stream whose Next returns nil at the end of what is
// visible now, and the next events when called again later (a tailable cursor's stream).
type Reader struct {
	opts Options
	src  []Source
	// pos is the last event read (returned or filtered out), or the high-water mark that
	// every event up to it was read.
	pos Token
	// buf are the events read ahead, in order; frontier is the time up to which every
	// shard's log was read into buf.
	buf      []record
	frontier uint64
	// invalidate is set once the stream's collection or database went away: the
	// invalidate event comes next, and after it ended.
	invalidate *record
	ended      bool
	// Examined and Bytes count the records read, for the stream's charge.
	Examined, Bytes int64
	// lastID is the _id (resume token document) of the event Next returned last, which the
	// stream's pipeline must keep (KeepsID).
	lastID []byte
}

// record is a change record read from a shard's log.
type record struct {
	tok Token
	rec bsoncore.Document
}

// Open returns the reader of sources' change logs for opts, positioned at opts.Start, or
// ChangeStreamHistoryLost when that is older than what the logs keep. The zero Start (with
// Resumed false) starts at the shards' common frontier: the events after the stream opened.
func Open(ctx context.Context, src []Source, opts Options) (*Reader, error) {
	r := &Reader{opts: opts, src: src, pos: opts.Start}
	front := ^uint64(0)
	for _, s := range src {
		b, err := s.Log.Read(ctx, store.ChangePos{TS: ^uint64(0), Pos: ^uint32(0)}, 0)
		if err != nil {
			return nil, catalog.StoreError(err)
		}
		if opts.Resumed && b.Trimmed != 0 && opts.Start.TS < b.Trimmed {
			return nil, historyLost()
		}
		front = min(front, b.Frontier)
	}
	if !opts.Resumed {
		if front == ^uint64(0) {
			front = 0
		}
		r.pos = hwm(front)
		r.opts.Start = r.pos
	}
	return r, nil
}

// historyLost is MongoDB's error for a resume point the logs no longer hold.
func historyLost() error {
	return mongoerr.New(mongoerr.ChangeStreamHistoryLost,
		"Resume of change stream was not possible, as the resume point may no longer be in the oplog.")
}

// Next implements stream.Stream: the next event, or nil when there is none now.
func (r *Reader) Next(ctx context.Context) (bsoncore.Document, error) {
	for {
		if r.ended {
			return nil, nil
		}
		if r.invalidate != nil {
			inv := r.invalidate
			r.invalidate, r.ended, r.pos = nil, true, inv.tok
			return r.noteID(appendInvalidate(nil, inv)), nil
		}
		if len(r.buf) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if err := r.fill(ctx); err != nil {
				return nil, err
			}
			if len(r.buf) == 0 {
				if r.pos.Less(hwm(r.frontier)) {
					r.pos = hwm(r.frontier)
				}
				return nil, nil
			}
		}
		rc := r.buf[0]
		r.buf[0] = record{}
		r.buf = r.buf[1:]
		r.pos = rc.tok
		doc, err := r.event(ctx, &rc)
		if err != nil || doc != nil {
			return r.noteID(doc), err
		}
	}
}

// noteID keeps the _id of doc, an event Next returns, for KeepsID.
func (r *Reader) noteID(doc bsoncore.Document) bsoncore.Document {
	if doc != nil {
		r.lastID = append(r.lastID[:0], doc.Lookup("_id").Data...)
	}
	return doc
}

// StartTime returns the cluster time the stream started reading after: a driver that resumes
// with startAtOperationTime at it (the aggregate's operationTime) loses no event.
func (r *Reader) StartTime() uint64 { return r.opts.Start.TS }

// ResumeToken returns the token a client resumes from after the events returned so far: the
// last one's, or the high-water mark once every event visible was read (postBatchResumeToken).
func (r *Reader) ResumeToken() Token {
	if len(r.buf) == 0 && r.invalidate == nil && r.pos.Less(hwm(r.frontier)) {
		return hwm(r.frontier)
	}
	return r.pos
}

// Ended reports that the stream was invalidated and returned its invalidate event.
func (r *Reader) Ended() bool { return r.ended }

// Close implements stream.Stream.
func (r *Reader) Close() { r.buf, r.ended = nil, true }

// fill reads the records after r.pos up to the shards' common frontier into r.buf, in order.
func (r *Reader) fill(ctx context.Context) error {
	upto := ^uint64(0)
	var all []record
	for _, s := range r.src {
		b, err := s.Log.Read(ctx, after(s.Shard, r.pos), readAhead)
		if err != nil {
			return catalog.StoreError(err)
		}
		if b.Trimmed != 0 && r.pos.TS < b.Trimmed && r.pos.TS != 0 {
			return historyLost() // the stream fell behind the log's retention
		}
		upto = min(upto, b.Frontier)
		for _, x := range b.Records {
			all = append(all, record{tok: Token{TS: x.Pos.TS, Shard: s.Shard, Pos: x.Pos.Pos}, rec: x.Rec})
			r.Examined++
			r.Bytes += int64(len(x.Rec))
		}
	}
	if upto == ^uint64(0) || upto < r.pos.TS {
		return nil
	}
	all = slices.DeleteFunc(all, func(x record) bool { return x.tok.TS > upto })
	slices.SortFunc(all, func(a, b record) int {
		switch {
		case a.tok.Less(b.tok):
			return -1
		case b.tok.Less(a.tok):
			return 1
		}
		return 0
	})
	r.buf, r.frontier = all, upto
	return nil
}

// after returns where shard's log is read from for a stream at pos: records of its own
// shard after pos, of lower shards after pos's time, of higher shards from pos's time on.
func after(shard uint32, pos Token) store.ChangePos {
	switch {
	case pos.TS == 0:
		return store.ChangePos{}
	case shard < pos.Shard:
		return store.ChangePos{TS: pos.TS, Pos: ^uint32(0)}
	case shard == pos.Shard:
		return store.ChangePos{TS: pos.TS, Pos: pos.Pos}
	}
	return store.ChangePos{TS: pos.TS - 1, Pos: ^uint32(0)}
}

// Charge returns the request units of the records the reader read so far: a scan that
// examined and returned them (shard.Cost; docs/compatibility.md's table).
func (r *Reader) Charge() float64 {
	return shard.Cost{DocsExamined: r.Examined, BytesReturned: r.Bytes}.RU()
}

// KeepsID is the stream of a change stream's events after its pipeline: it fails, as
// MongoDB does, when the pipeline changed an event's _id, the token a client resumes from.
type KeepsID struct {
	In stream.Stream
	R  *Reader
	// OnClose, when set, runs when the stream closes (Hub.Opened's count).
	OnClose func()
}

// Next implements stream.Stream.
func (k *KeepsID) Next(ctx context.Context) (bsoncore.Document, error) {
	doc, err := k.In.Next(ctx)
	if doc == nil || err != nil {
		return doc, err
	}
	id, err := doc.LookupErr("_id")
	if err != nil || id.Type != bsoncore.TypeEmbeddedDocument || !bytes.Equal(id.Data, k.R.lastID) {
		return nil, mongoerr.New(mongoerr.ChangeStreamFatalError,
			"Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. "+
				"Modifying the _id field of an event makes it impossible to resume the stream from that point. "+
				"Only transformations that retain the unmodified _id field are allowed.")
	}
	return doc, nil
}

// Close implements stream.Stream.
func (k *KeepsID) Close() {
	k.In.Close()
	if k.OnClose != nil {
		k.OnClose()
	}
}
