package stream

import "container/heap"

// A cursor that reads the present (read concern "local", "majority" or "available" outside a
// transaction) gives up its read view between batches, as MongoDB's plan executor yields:
// its next batch reads the data as it is then, from just after the last document it
// returned (a document deleted meanwhile is not returned, a changed one is returned as it is
// now), and an idle cursor pins no Pebble snapshot, memtable or sstable. A snapshot read
// (readConcern "snapshot", a transaction) never yields.

// Yielder is a stream that can give up its read view.
type Yielder interface {
	// Yield releases the stream's read view (snapshots, iterators, documents read ahead)
	// and keeps its position: its next Next reads the present from just after the last
	// document it returned, or from that document again when unread is set (its consumer
	// dropped it). It reports false when it cannot, and is then left as it was: it keeps
	// reading its old view.
	Yield(unread bool) bool
}

// Yield yields s if it is a Yielder and reports whether it did.
func Yield(s Stream, unread bool) bool {
	y, ok := s.(Yielder)
	return ok && y.Yield(unread)
}

// Yield implements Yielder: memory holds no view.
func (s *Slice) Yield(unread bool) bool {
	if unread {
		if s.i == 0 {
			return false
		}
		s.i--
	}
	return true
}

// Yield implements Yielder.
func (Empty) Yield(bool) bool { return true }

// Yield implements Yielder: the input being read yields; those after it, which may read
// ahead (prefetching shard readers), yield as not started.
func (c *Concat) Yield(unread bool) bool {
	ok := true
	for i := c.i; i < len(c.In); i++ {
		if !Yield(c.In[i], unread && i == c.i) && i == c.i {
			ok = false
		}
	}
	return ok
}

// Yield implements Yielder. heads[0] is the document Next returned last, the others are
// documents the merge read and did not return: their inputs yield with unread set and are
// read again, from the present, by the next Next; the last one's input yields as the
// consumer asks, and when it cannot put its document back the merge keeps it (holdTop). An
// input that cannot yield keeps its head.
func (s *Merge) Yield(unread bool) bool {
	if !s.started || len(s.heads) == 0 {
		for _, in := range s.In {
			Yield(in, false)
		}
		return !unread || s.started
	}
	for _, m := range s.heads {
		m.keep() // the document may not outlive its input's view
	}
	top := s.heads[0]
	keep := s.heads[:1]
	for _, m := range s.heads[1:] {
		if Yield(s.In[m.src], true) {
			s.refill = append(s.refill, m)
		} else {
			keep = append(keep, m)
		}
	}
	s.heads = keep
	heap.Init(&s.heads) // top, the least, stays first
	if !Yield(s.In[top.src], unread) && unread {
		s.holdTop = true
	}
	return true
}

// Yield implements Yielder.
func (s *Skip) Yield(unread bool) bool { return Yield(s.In, unread) }

// Yield implements Yielder: an unread document is counted again.
func (s *Limit) Yield(unread bool) bool {
	if !Yield(s.In, unread) {
		return false
	}
	if unread {
		s.N++
	}
	return true
}

// Yield implements Yielder: one document out for each one in.
func (s *Project) Yield(unread bool) bool { return Yield(s.In, unread) }

// Yield implements Yielder. Once loaded, the sort holds its whole input (in memory or its
// spill): the input is closed, which releases its view. An unread document cannot be put
// back.
func (s *Sort) Yield(unread bool) bool {
	if !s.done {
		return Yield(s.In, unread)
	}
	if unread {
		return false
	}
	s.In.Close()
	return true
}
