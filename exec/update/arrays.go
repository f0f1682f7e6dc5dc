package update

import (
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// objectOnArray applies an object node to an existing array: children named by an index
// update that element, children past the end create elements (padding with nulls), and
// other children name fields an array cannot have. Arrays are rewritten with their keys
// renumbered.
func (a *applier) objectOnArray(dst []byte, n *node, key, arr []byte) ([]byte, error) {
	body, ok := docBody(arr)
	if !ok {
		return dst, errInvalidBSON("document")
	}
	seqMark := len(a.seq)
	a.arrays = append(a.arrays, key)
	defer func() { a.seq, a.arrays = a.seq[:seqMark], a.arrays[:len(a.arrays)-1] }()
	seq, err := a.sequence(n)
	if err != nil {
		return dst, err
	}
	if !ascending(seq) {
		return a.objectOnArraySlow(dst, seq, key, arr, body)
	}
	dst, at := startDoc(dst, bsoncore.TypeArray, key, false)
	j, length := 0, 0
	for ; len(body) > 0; length++ {
		e, rest, ok := readElem(body)
		if !ok {
			return dst, errInvalidBSON("document")
		}
		body = rest
		for j < len(seq) && seq[j].index < 0 {
			j++
		}
		k := a.indexKey(length)
		if j == len(seq) || seq[j].index != length {
			dst = appendElem(dst, e.t, k, e.val)
			continue
		}
		if dst, err = a.applyElement(dst, seq[j], k, existing(e.t, e.val, true)); err != nil {
			return dst, err
		}
		j++
	}
	base := target{baseKey: key, baseT: bsoncore.TypeArray, baseV: arr}
	for _, c := range seq {
		if c.index >= 0 && c.index < length {
			continue
		}
		if dst, length, err = a.createInArray(dst, c, length, base); err != nil {
			return dst, err
		}
	}
	return endDoc(dst, at), nil
}

// applyElement applies a child to an existing array element written under key k.
func (a *applier) applyElement(dst []byte, c child, k []byte, tgt target) ([]byte, error) {
	a.push(c.key, true)
	out, emitted, err := a.applyNode(dst, c.n, k, tgt)
	a.pop()
	if err == nil && !emitted {
		out = appendHeader(out, bsoncore.TypeNull, k)
	}
	return out, err
}

// ascending reports whether the children that name indexes do so in increasing order, so
// that applying them while streaming the array equals applying them one after the other.
func ascending(seq []child) bool {
	last := -1
	for _, c := range seq {
		if c.index < 0 {
			if c.digits {
				last = 1 << 62 // an index too large to create; nothing may come after it
			}
			continue
		}
		if c.index <= last {
			return false
		}
		last = c.index
	}
	return true
}

// createInArray applies a child that names no existing element of an array of length
// elements; base describes the array. It returns the new length.
func (a *applier) createInArray(dst []byte, c child, length int, base target) ([]byte, int, error) {
	tgt := base
	idx := c.index
	if c.digits {
		tgt.creatable, tgt.traversable = true, idx >= 0
		if idx < 0 {
			idx = paddingIndex(c.name)
		}
	}
	k := c.key
	if c.digits {
		k = a.indexKey(idx)
	}
	start := len(dst)
	a.push(c.key, false)
	out, emitted, err := a.applyNode(dst, c.n, k, tgt)
	a.pop()
	if err != nil || !emitted {
		return out, length, err
	}
	if idx-length > maxPadding {
		return out[:start], length, errf(codeCannotBackfillArray, "can't backfill more than %d elements", maxPadding)
	}
	if idx > length {
		a.scratch = append(a.scratch[:0], out[start:]...)
		out = out[:start]
		for p := length; p < idx; p++ {
			out = appendHeader(out, bsoncore.TypeNull, a.indexKey(p))
		}
		out = append(out, a.scratch...)
	}
	return out, idx + 1, nil
}

// arrayEntry is an array element held apart while children apply one after the other.
type arrayEntry struct {
	t bsoncore.Type
	v []byte
}

// objectOnArraySlow applies the children of an object node to an array one after the other,
// each seeing what the ones before it did: needed when they do not name increasing indexes
// (zero-padded names, or a positional match ordered after a larger index).
func (a *applier) objectOnArraySlow(dst []byte, seq []child, key, arr, body []byte) ([]byte, error) {
	var entries []arrayEntry
	for len(body) > 0 {
		e, rest, ok := readElem(body)
		if !ok {
			return dst, errInvalidBSON("document")
		}
		entries = append(entries, arrayEntry{e.t, e.val})
		body = rest
	}
	base := target{baseKey: key, baseT: bsoncore.TypeArray, baseV: arr}
	for _, c := range seq {
		var err error
		if c.index >= 0 && c.index < len(entries) {
			k := a.indexKey(c.index)
			var out []byte
			if out, err = a.applyElement(nil, c, k, existing(entries[c.index].t, entries[c.index].v, true)); err != nil {
				return dst, err
			}
			e, _, _ := readElem(out)
			entries[c.index] = arrayEntry{e.t, e.val}
			continue
		}
		out, _, err := a.createInArray(nil, c, len(entries), base)
		if err != nil {
			return dst, err
		}
		for len(out) > 0 {
			e, rest, _ := readElem(out)
			entries = append(entries, arrayEntry{e.t, e.val})
			out = rest
		}
	}
	dst, at := startDoc(dst, bsoncore.TypeArray, key, false)
	for i, e := range entries {
		dst = appendElem(dst, e.t, a.indexKey(i), e.v)
	}
	return endDoc(dst, at), nil
}

// arrayNode applies the children of an array node ("$[]" and "$[<id>]") to the elements of
// an existing array that match their filters; children matching the same element are
// merged first, and fail when they update the same path.
func (a *applier) arrayNode(dst []byte, n *node, key []byte, tgt target) ([]byte, error) {
	if !tgt.exists {
		return dst, errf(mongoerr.BadValue,
			"The path '%s' must exist in the document in order to apply array updates.", a.pathString())
	}
	if tgt.t != bsoncore.TypeArray {
		return dst, errf(mongoerr.BadValue, "Cannot apply array updates to non-array element %s",
			bsonx.ShellElement(key, tgt.t, tgt.v))
	}
	body, ok := docBody(tgt.v)
	if !ok {
		return dst, errInvalidBSON("document")
	}
	a.arrays = append(a.arrays, key)
	defer func() { a.arrays = a.arrays[:len(a.arrays)-1] }()
	dst, at := startDoc(dst, bsoncore.TypeArray, key, false)
	for i := 0; len(body) > 0; i++ {
		e, rest, ok := readElem(body)
		if !ok {
			return dst, errInvalidBSON("document")
		}
		body = rest
		k := a.indexKey(i)
		var match *node
		for _, c := range n.children {
			if c.filter != nil && !c.filter.matches(e.t, e.val, &a.scratch) {
				continue
			}
			if match == nil {
				match = c.n
				continue
			}
			merged, err := mergeNodes(match, c.n, a.pathString()+"."+string(k))
			if err != nil {
				return dst, err
			}
			match = merged
		}
		if match == nil {
			dst = appendElem(dst, e.t, k, e.val)
			continue
		}
		var err error
		if dst, err = a.applyElement(dst, child{key: k, n: match}, k, existing(e.t, e.val, true)); err != nil {
			return dst, err
		}
	}
	return endDoc(dst, at), nil
}
