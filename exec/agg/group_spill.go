package agg

import (
	"bytes"
	"context"
	"encoding/binary"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// $group past its memory bound (internalDocumentSourceGroupMaxMemoryBytes). Without
// allowDiskUse it fails with code 292. With it, the table stops growing: every later input
// document goes to a spill keyed by its encoded group key (bsonx.AppendKey, so Pebble's order
// is the order of the _id values), with the _id value stored beside it. At the end the groups
// of the table, sorted by key, are merged with the spill, which Pebble returns in (key,
// arrival) order; each group is finished from its table state (if any) plus its spilled
// documents and emitted before the next one is built, so memory holds the table and one
// group. Every spilled document arrived after every document in the table, so each group
// sees its documents in input order ($push, $first and $last are unchanged). With a spill the
// groups come out in _id order (MongoDB leaves the order unspecified; $bucket wants it).
//
// Per-shard partial groups (partial.go) do not spill: past the bound with allowDiskUse
// they keep growing, as before.

// maxMemory is the memory bound of the stage's table.
func (s *GroupStage) maxMemory() int64 {
	if s.env.MemLimit > 0 {
		return s.env.MemLimit
	}
	if s.env.GroupBytes > 0 {
		return s.env.GroupBytes
	}
	return MaxStageBytes
}

// groupID evaluates the group _id of d: missing becomes null, and $bucket maps the value to
// its bucket.
func (s *GroupStage) groupID(d bsoncore.Document, vars *expr.Vars) (bsoncore.Value, error) {
	id, err := s.id.Eval(d, vars)
	if err != nil {
		return bsoncore.Value{}, err
	}
	return s.finishID(id)
}

// finishID turns the value of the _id expression into the group's _id: missing is null, and
// $bucket's boundaries map it.
func (s *GroupStage) finishID(id bsoncore.Value) (bsoncore.Value, error) {
	if id.Type == 0 {
		id = NullValue
	}
	if s.bucket != nil {
		return s.bucket(id)
	}
	return id, nil
}

// newGroup returns a group of id with fresh accumulator states.
func (s *GroupStage) newGroup(id bsoncore.Value) (*group, error) {
	g := &group{id: ownValue(id), states: make([]accState, len(s.accs))}
	for i, a := range s.accs {
		var err error
		if g.states[i], err = a.newState(g.id); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// overflow handles a table past its bound: the error without allowDiskUse, else the rest of
// in goes to a spill (spillable tables) or the table keeps growing (per-shard tables).
func (t *groupTable) overflow(ctx context.Context, in stream.Stream) error {
	if !t.s.env.AllowDiskUse {
		return MemoryError("$group")
	}
	if !t.spillable {
		return nil
	}
	sp, err := t.s.env.Temp.NewSpill()
	if err != nil {
		return err
	}
	t.spill = sp
	var key, val []byte
	var chk stream.Checker
	y := stream.NewYieldPolicy()
	for {
		if y.Due() { // the document met last is spilled by now
			stream.Yield(in, false)
		}
		d, err := in.Next(ctx)
		if err != nil || d == nil {
			return err
		}
		if err := chk.Tick(ctx); err != nil {
			return err
		}
		id, err := t.s.groupID(d, t.vars)
		if err != nil {
			return err
		}
		key = bsonx.AppendKey(key[:0], bsonx.Collate(t.s.env.Collator(), id))
		val = appendSpilledDoc(val[:0], id, d)
		if err := sp.Add(key, val); err != nil {
			return err
		}
	}
}

// appendSpilledDoc encodes a spilled record's value: the _id value (type, data length, data),
// then the document.
func appendSpilledDoc(dst []byte, id bsoncore.Value, d bsoncore.Document) []byte {
	dst = append(dst, byte(id.Type))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(id.Data)))
	dst = append(dst, id.Data...)
	return append(dst, d...)
}

// readSpilledDoc decodes appendSpilledDoc's encoding.
func readSpilledDoc(v []byte) (bsoncore.Value, bsoncore.Document, error) {
	if len(v) < 5 || int(binary.BigEndian.Uint32(v[1:5])) > len(v)-5 {
		return bsoncore.Value{}, nil, mongoerr.New(mongoerr.InternalError, "corrupt $group spill record")
	}
	n := 5 + int(binary.BigEndian.Uint32(v[1:5]))
	return bsoncore.Value{Type: bsoncore.Type(v[0]), Data: v[5:n]}, v[n:], nil
}

// groupStream is $group's output: the table's groups, or their merge with a spill.
type groupStream struct {
	s       *GroupStage
	in      stream.Stream
	started bool
	docs    []bsoncore.Document // the result without a spill
	i       int
	merge   *groupMerge // set when the table spilled, until the merge ends
	spilled bool        // the table spilled (explain's usedDisk)
	res     *stream.Reservation
}

// Next implements stream.Stream.
func (g *groupStream) Next(ctx context.Context) (bsoncore.Document, error) {
	if !g.started {
		g.started = true
		if err := g.load(ctx); err != nil {
			return nil, err
		}
	}
	if g.merge != nil {
		return g.merge.Next()
	}
	if g.i >= len(g.docs) {
		return nil, nil
	}
	d := g.docs[g.i]
	g.docs[g.i] = nil
	g.i++
	return d, nil
}

// load reads the whole input.
func (g *groupStream) load(ctx context.Context) error {
	s := g.s
	t := s.newTable()
	t.spillable = true
	t.res = s.env.Temp.Budget().NewReservation()
	g.res = t.res
	err := t.consume(ctx, g.in)
	if t.spill != nil {
		g.merge = &groupMerge{s: s, t: t, sp: t.spill}
		g.spilled = true
	}
	if err != nil {
		return err
	}
	g.in.Close()
	if g.merge != nil {
		return g.merge.start()
	}
	if s.bucket != nil {
		sort.SliceStable(t.order, func(i, j int) bool { return bsonx.Compare(t.order[i].id, t.order[j].id) < 0 })
	}
	g.docs, err = s.finish(t.order)
	return err
}

// Close implements stream.Stream.
func (g *groupStream) Close() {
	g.in.Close()
	g.docs = nil
	g.res.Release()
	if g.merge != nil {
		_ = g.merge.Close() // scratch data: nothing to lose
		g.merge = nil
	}
}

// groupMerge merges a table's groups, sorted by key, with its spill.
type groupMerge struct {
	s     *GroupStage
	t     *groupTable
	mem   []keyedGroup
	mi    int
	sp    *store.Spill
	it    *store.SpillIter
	valid bool // it is at a record not folded yet
	key   []byte
}

// keyedGroup is a table group with its encoded key.
type keyedGroup struct {
	key []byte
	g   *group
}

// start sorts the table's groups and opens the spill.
func (m *groupMerge) start() error {
	m.mem = make([]keyedGroup, 0, len(m.t.groups))
	for k, g := range m.t.groups {
		m.mem = append(m.mem, keyedGroup{key: []byte(k), g: g})
	}
	m.t.groups, m.t.order = nil, nil
	sort.Slice(m.mem, func(i, j int) bool { return bytes.Compare(m.mem[i].key, m.mem[j].key) < 0 })
	it, err := m.sp.Iter()
	if err != nil {
		return err
	}
	m.it = it
	m.valid = it.Next()
	return it.Err()
}

// Next finishes and returns the next group in key order.
func (m *groupMerge) Next() (bsoncore.Document, error) {
	var g *group
	switch {
	case m.mi < len(m.mem) && (!m.valid || bytes.Compare(m.mem[m.mi].key, m.it.Key()) <= 0):
		g, m.key = m.mem[m.mi].g, append(m.key[:0], m.mem[m.mi].key...)
		m.mem[m.mi] = keyedGroup{}
		m.mi++
	case m.valid:
		// A group only in the spill: its _id is its first document's.
		id, _, err := readSpilledDoc(m.it.Value())
		if err != nil {
			return nil, err
		}
		if g, err = m.s.newGroup(id); err != nil {
			return nil, err
		}
		m.key = append(m.key[:0], m.it.Key()...)
	default:
		return nil, m.Close()
	}
	if err := m.fold(g); err != nil {
		return nil, err
	}
	out, err := m.s.finish([]*group{g})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// fold feeds g the spilled documents of m.key.
func (m *groupMerge) fold(g *group) error {
	for m.valid && bytes.Equal(m.it.Key(), m.key) {
		_, d, err := readSpilledDoc(m.it.Value())
		if err != nil {
			return err
		}
		for i, a := range m.s.accs {
			if _, err := m.s.accumulate(a, g.states[i], d, m.t.accVars); err != nil {
				return err
			}
		}
		m.valid = m.it.Next()
	}
	return m.it.Err()
}

// Close closes the iterator and drops the spill; it is idempotent.
func (m *groupMerge) Close() error {
	var err error
	if m.it != nil {
		err = m.it.Close()
		m.it = nil
	}
	if m.sp != nil {
		if cerr := m.sp.Close(); err == nil {
			err = cerr
		}
		m.sp = nil
	}
	m.valid = false
	return err
}
