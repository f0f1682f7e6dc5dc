package agg

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/stream"
)

// mergeableState is an accumulator state that can absorb another state of the same
// accumulator, built over a disjoint part of the input (another shard).
type mergeableState interface {
	merge(o accState) (int, error)
}

// partialGroup reports whether $group s can run as one partial group per shard merged here:
// every accumulator must be mergeable and insensitive to input order.
func (s *GroupStage) partialGroup() bool {
	if s.bucket != nil {
		return false
	}
	for _, a := range s.accs {
		switch a.op {
		case "$sum", "$count", "$avg", "$min", "$max", "$addToSet", "$stdDevPop", "$stdDevSamp", "$maxN", "$minN", "$percentile", "$median",
			"$accumulator": // its merge function folds the shards' states, as on a sharded MongoDB
		default:
			return false // $push, $first, $last, ...: the merged order would differ
		}
	}
	return true
}

// openPerShard runs s over each input concurrently (one goroutine per shard) and merges the
// partial groups. merged is the stream the inputs came from; closing the result closes it.
// Each partial table is charged to the memory account as it grows; the merged one keeps its
// charge until the result is closed.
func (s *GroupStage) openPerShard(ins []stream.Stream, merged stream.Stream) stream.Stream {
	res := s.env.reservation()
	return &onceStream{in: merged, res: res, fn: func(ctx context.Context) ([]bsoncore.Document, error) {
		tables := make([]*groupTable, len(ins))
		errs := make([]error, len(ins))
		var wg sync.WaitGroup
		for i, in := range ins {
			t := s.newTable()
			t.res = res
			if i > 0 {
				t.res = s.env.reservation()
				defer t.res.Release()
			}
			tables[i] = t
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = t.consume(ctx, in)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return nil, err
			}
		}
		all := tables[0]
		for _, t := range tables[1:] {
			if err := all.mergeTable(t); err != nil {
				return nil, err
			}
			t.res.Release()
			hold(all.res, all.mem)
		}
		return s.finish(all.order)
	}}
}

// mergeTable folds the groups of o into t.
func (t *groupTable) mergeTable(o *groupTable) error {
	for _, og := range o.order {
		g, err := t.group(og.id)
		if err != nil {
			return err
		}
		for i, st := range g.states {
			n, err := st.(mergeableState).merge(og.states[i])
			if err != nil {
				return err
			}
			t.mem += int64(n)
		}
		if t.s.env.overMemory(t.mem) {
			return MemoryError("$group")
		}
	}
	return nil
}

// merge implements mergeableState.
func (st *sumState) merge(o accState) (int, error) {
	return 0, st.s.merge(&o.(*sumState).s)
}

// merge implements mergeableState.
func (st *avgState) merge(o accState) (int, error) {
	ob := o.(*avgState)
	st.n += ob.n
	return 0, st.s.merge(&ob.s)
}

// merge implements mergeableState.
func (st *minMaxState) merge(o accState) (int, error) {
	return st.add(o.(*minMaxState).v, nil)
}

// merge implements mergeableState.
func (st *pushState) merge(o accState) (int, error) {
	n := 0
	for _, v := range o.(*pushState).vals {
		k, err := st.add(v, nil)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// merge implements mergeableState.
func (st *minMaxNState) merge(o accState) (int, error) {
	n := 0
	for _, v := range o.(*minMaxNState).vals {
		k, err := st.add(v, nil)
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// merge combines two Welford states (Chan et al.'s parallel formula).
func (st *stdDevState) merge(o accState) (int, error) { //nolint:unparam // implements mergeableState: a Welford state never grows
	ob := o.(*stdDevState)
	if ob.n == 0 {
		return 0, nil
	}
	if st.n == 0 {
		st.n, st.mean, st.m = ob.n, ob.mean, ob.m
		return 0, nil
	}
	n := float64(st.n + ob.n)
	d := ob.mean - st.mean
	st.m += ob.m + d*d*float64(st.n)*float64(ob.n)/n
	st.mean += d * float64(ob.n) / n
	st.n += ob.n
	return 0, nil
}
