package query

import "context"

// A prefetching reader yields as its stream does (scan_yield.go): it is stopped, its
// snapshot and iterators are closed, and it starts again at the consumer's next Next. What it
// read ahead and the consumer has not taken yet is kept while the shard applied no batch since
// the reader's snapshot (store.DB.Applied: those documents are still the present, and the
// reader resumes after the last of them): a cursor read by getMores of a collection nobody
// writes re-reads nothing. Otherwise it is dropped and the reader resumes after the last
// document the consumer took (at it, when unread).

// yieldState is what a yield of a prefetching reader left for its restart.
type yieldState struct {
	// discarded: the documents read ahead were dropped at the yield (unread), and the
	// reader resumes where the consumer stands.
	discarded bool
	// keepAt is the position of the last document read ahead, applied the shard's count of
	// applied batches before the reader's snapshot (valid when counted), done that the
	// reader reached the end of its stream.
	keepAt  resumeAt
	applied uint64
	counted bool
	done    bool
}

// appliedCounter is a shard that counts the batches it applied (store.DB.Applied).
type appliedCounter interface{ Applied() uint64 }

// appliedOf returns shard db's count of applied batches, if it keeps one.
func appliedOf(db any) (uint64, bool) {
	if c, ok := db.(appliedCounter); ok {
		return c.Applied(), true
	}
	return 0, false
}

// yield stops the reader and keeps what it read ahead for the restart to judge; with unread,
// the documents read ahead are dropped at once.
func (pf *prefetch) yield(unread bool) bool {
	if !pf.positions {
		return false
	}
	if pf.stopped {
		return !unread
	}
	pf.cancel()
	<-pf.done
	for drained := false; !drained; {
		select {
		case b := <-pf.ch:
			pf.held = append(pf.held, b)
		default:
			drained = true
		}
	}
	rd := pf.rd
	ys := yieldState{applied: rd.applied, counted: rd.counted}
	var at resumeAt
	at, ys.done = pf.keepPoint()
	ys.keepAt = at.copyTo(pf.yieldAt.keepAt.key)
	pf.yieldAt = ys
	rd.pin()
	rd.releaseView()
	pf.stopped = true
	if unread {
		pf.discard(true)
	}
	return true
}

// keepPoint makes the batches read ahead whole again (a batch the cancelled reader ended with
// an error holds documents read before it) and returns the position of the last document
// they hold (the consumer's, when they hold none), and whether the reader had reached the end
// of its stream. The position's key points into a batch.
func (pf *prefetch) keepPoint() (resumeAt, bool) {
	at, done := pf.consumerAt(), false
	bs := pf.held
	if pf.cur != nil {
		bs = append([]*docBatch{pf.cur}, bs...)
	}
	for _, b := range bs {
		if b.err != nil {
			b.err, b.last = nil, false
		}
		if len(b.ats) > 0 {
			at = b.at(len(b.ats) - 1)
		}
		done = b.last
	}
	return at, done
}

// consumerAt is the position of the last document the consumer took; its key points into
// a batch or pf.last.
func (pf *prefetch) consumerAt() resumeAt {
	if b := pf.cur; b != nil && pf.i > 0 {
		return b.at(pf.i - 1)
	}
	return pf.last
}

// discard drops the documents read ahead: the reader resumes after the last document the
// consumer took, or at it when unread.
func (pf *prefetch) discard(unread bool) {
	rd := pf.rd
	rd.at = pf.consumerAt().copyTo(rd.at.key)
	rd.resumeUnread, rd.yielded = unread, true
	if unread {
		pf.taken--
	}
	pf.remaining = -1
	if pf.limit > 0 {
		pf.remaining = pf.limit - pf.taken
	}
	pf.drain()
	pf.yieldAt.discarded, pf.yieldAt.done = true, false
}

// restart starts the reader again after a yield: after what it read ahead when the shard
// applied nothing since, else where the consumer stands.
func (pf *prefetch) restart() {
	pf.stopped = false
	ys := &pf.yieldAt
	rd := pf.rd
	if now, ok := appliedOf(rd.db); !ys.discarded && ys.counted && ok && now == ys.applied {
		rd.at = ys.keepAt.copyTo(rd.at.key)
		rd.resumeUnread, rd.yielded = false, true
		if pf.limit > 0 {
			pf.remaining = pf.limit - pf.taken - pf.buffered()
		}
		if ys.done {
			return // the consumer ends with the batches held
		}
	} else if !ys.discarded {
		pf.discard(false)
	}
	ys.discarded = false
	ctx, cancel := context.WithCancel(context.Background())
	pf.done = make(chan struct{}) // ch is empty (the yield took its batches), free is kept
	pf.cancel, pf.batchDocs = cancel, firstPrefetchDocs
	go pf.run(ctx)
}

// buffered counts the documents read ahead that the consumer has not taken.
func (pf *prefetch) buffered() int64 {
	n := 0
	if pf.cur != nil {
		n = len(pf.cur.ends) - pf.i
	}
	for _, b := range pf.held {
		n += len(b.ends)
	}
	return int64(n)
}

// copyTo returns a copy of at whose key is in buf's memory (nil when at's is nil).
func (at resumeAt) copyTo(buf []byte) resumeAt {
	if at.key != nil {
		at.key = append(buf[:0], at.key...)
	}
	return at
}
