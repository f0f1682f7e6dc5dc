package agg

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// groupFields reads the top-level fields that a $group's _id and accumulators name
// ({_id: "$deviceId", avg: {$avg: "$metricValue"}, max: {$max: "$metricValue"}}) in one pass
// over each document, the way MongoDB's dependency analysis has $group read only the fields
// it needs: evaluating each expression looked its field up from the document's start again
// (the agg workload read deviceId once and metricValue twice per document, 20% of its CPU).
// Only a path of one field qualifies: its value is the field's value whatever its type (a
// longer path fans out over arrays, which the expression's evaluation does).
type groupFields struct {
	names []string         // the distinct field names read
	id    int              // the slot of _id's field; -1: _id is evaluated
	accs  []int            // the slot of each accumulator's input; -1: it is evaluated
	vals  []bsoncore.Value // the current document's values by slot; Type 0: missing
	found int              // how many slots load has filled
}

// planFields returns the fields s reads in one pass, nil when no expression of s is a
// top-level field path.
func (s *GroupStage) planFields() *groupFields {
	f := &groupFields{id: -1, accs: make([]int, len(s.accs))}
	if s.id != nil {
		if p, ok := s.id.FieldPath(); ok && !strings.Contains(p, ".") {
			f.id = f.slot(p)
		}
	}
	for i, a := range s.accs {
		f.accs[i] = -1
		if a.op == "$count" || a.input == nil || a.js != nil {
			continue
		}
		if p, ok := a.input.FieldPath(); ok && !strings.Contains(p, ".") {
			f.accs[i] = f.slot(p)
		}
	}
	if len(f.names) == 0 {
		return nil
	}
	f.vals = make([]bsoncore.Value, len(f.names))
	return f
}

// slot returns name's slot, adding it when new.
func (f *groupFields) slot(name string) int {
	for i, n := range f.names {
		if n == name {
			return i
		}
	}
	f.names = append(f.names, name)
	return len(f.names) - 1
}

// load reads d's values of the fields, stopping once all are found. The first of duplicate
// fields wins, as a lookup finds it; a malformed tail reads as missing, as a lookup fails.
func (f *groupFields) load(d bsoncore.Document) {
	clear(f.vals)
	f.found = 0
	length, _, ok := bsoncore.ReadLength(d)
	if !ok || length < 5 || int(length) > len(d) {
		return
	}
	rem := d[4 : length-1]
	for len(rem) > 0 && f.found < len(f.names) {
		el, rest, ok := bsoncore.ReadElement(rem)
		if !ok {
			return
		}
		rem = rest
		key, err := el.KeyBytesErr()
		if err != nil {
			return
		}
		for i, n := range f.names {
			if f.vals[i].Type == 0 && string(key) == n {
				v, err := el.ValueErr()
				if err != nil {
					return
				}
				f.vals[i] = v
				f.found++
				break
			}
		}
	}
}

// idOf returns the _id of the document load read last, when _id is one of the fields.
func (f *groupFields) idOf() (bsoncore.Value, bool) {
	if f == nil || f.id < 0 {
		return bsoncore.Value{}, false
	}
	return f.vals[f.id], true
}

// accOf returns accumulator i's input in the document load read last, when it is a field.
func (f *groupFields) accOf(i int) (bsoncore.Value, bool) {
	if f == nil || f.accs[i] < 0 {
		return bsoncore.Value{}, false
	}
	return f.vals[f.accs[i]], true
}
