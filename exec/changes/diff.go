package changes

import (
	"bytes"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Diff returns the updateDescription of an update from old to new, as MongoDB's change
// events report it: updatedFields (dotted paths into sub-documents and array elements that
// changed or appeared, with their new values), removedFields (paths that disappeared) and
// truncatedArrays ({field, newSize} for arrays that got shorter). Values equal in type and
// bytes are unchanged; a field that changed type is updated whole, as are values that are
// not both documents or both arrays. Field order alone is not a change. Its last field,
// disambiguatedPaths, maps each path whose dotted form is ambiguous (a field name that is a
// number or holds a dot) to its components, array indices as ints; streams show it with
// showExpandedEvents only.
//
// Every update pays for it (the change record is written with the write), so it walks both
// documents once when their fields are in the same order (what update operators leave),
// builds a path only for what it reports, and allocates only its result.
func Diff(old, cur bsoncore.Document) bsoncore.Document {
	// The usual diff (a few fields of short paths set) fits in one allocation of
	// diffBufs, where growing path, stack and updated from nil took two each.
	b := new(diffBufs)
	d := differ{path: b.path[:0], stack: b.stack[:0], updated: b.updated[:0]}
	d.doc(old, cur)
	out := make([]byte, 0, len(d.updated)+len(d.removed)+len(d.truncated)+len(d.ambiguous)+96)
	idx, out := bsoncore.AppendDocumentStart(out)
	uidx, out := bsoncore.AppendDocumentElementStart(out, "updatedFields")
	out = append(out, d.updated...)
	out, _ = bsoncore.AppendDocumentEnd(out, uidx)
	ridx, out := bsoncore.AppendArrayElementStart(out, "removedFields")
	out = append(out, d.removed...)
	out, _ = bsoncore.AppendArrayEnd(out, ridx)
	tidx, out := bsoncore.AppendArrayElementStart(out, "truncatedArrays")
	out = append(out, d.truncated...)
	out, _ = bsoncore.AppendArrayEnd(out, tidx)
	didx, out := bsoncore.AppendDocumentElementStart(out, "disambiguatedPaths")
	out = append(out, d.ambiguous...)
	out, _ = bsoncore.AppendDocumentEnd(out, didx)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// diffBufs holds the first bytes of a differ's path, stack and updated.
type diffBufs struct {
	path    [32]byte
	stack   [4]component
	updated [128]byte
}

// component is one step of a path: a field name, or an array index (index >= 0).
type component struct {
	name  []byte
	index int
}

// differ accumulates a diff: updated holds the elements of updatedFields, removed those of
// removedFields, truncated those of truncatedArrays and ambiguous those of
// disambiguatedPaths. path is the dotted path being diffed and stack the same by component.
type differ struct {
	updated, removed, truncated, ambiguous []byte
	nRemoved, nTrunc                       int
	path                                   []byte
	stack                                  []component
}

// push enters field name (index < 0) or array element index of the current path.
func (d *differ) push(name []byte, index int) {
	if len(d.stack) > 0 {
		d.path = append(d.path, '.')
	}
	if index >= 0 {
		d.path = strconv.AppendInt(d.path, int64(index), 10)
	} else {
		d.path = append(d.path, name...)
	}
	d.stack = append(d.stack, component{name: name, index: index})
}

// pop leaves the last component; mark is len(d.path) before its push.
func (d *differ) pop(mark int) {
	d.path = d.path[:mark]
	d.stack = d.stack[:len(d.stack)-1]
}

// elements returns a document's elements as raw bytes (between its length and its final 0).
func elements(doc []byte) []byte {
	if len(doc) < 5 {
		return nil
	}
	return doc[4 : len(doc)-1]
}

// doc diffs two documents at the current path. Fields in the same position with the same
// name are paired as they are read; from the first that is not, fields are looked up.
func (d *differ) doc(old, cur bsoncore.Document) {
	oldRest, aligned := elements(old), true
	for rest := elements(cur); len(rest) > 0; {
		ne, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			break
		}
		rest = r
		key := ne.KeyBytes()
		var ov bsoncore.Value
		found := false
		if aligned {
			oe, r, ok := bsoncore.ReadElement(oldRest)
			switch {
			case ok && bytes.Equal(oe, ne): // same name, type and value: most fields
				oldRest = r
				continue
			case ok && bytes.Equal(oe.KeyBytes(), key):
				ov, found, oldRest = oe.Value(), true, r
			default:
				aligned = false
			}
		}
		if !found && !aligned {
			v, err := old.LookupErr(string(key))
			ov, found = v, err == nil
		}
		mark := len(d.path)
		d.push(key, -1)
		if found {
			d.value(ov, ne.Value())
		} else {
			d.update(ne.Value())
		}
		d.pop(mark)
	}
	// Aligned, the old fields left over are the removed ones; otherwise any old field may be.
	if aligned {
		old = nil
	} else {
		oldRest = elements(old)
	}
	for len(oldRest) > 0 {
		oe, r, ok := bsoncore.ReadElement(oldRest)
		if !ok {
			break
		}
		oldRest = r
		if old != nil {
			if _, err := cur.LookupErr(string(oe.KeyBytes())); err == nil {
				continue
			}
		}
		mark := len(d.path)
		d.push(oe.KeyBytes(), -1)
		d.removed = bsoncore.AppendStringElement(d.removed, strconv.Itoa(d.nRemoved), string(d.path))
		d.nRemoved++
		d.noteAmbiguous()
		d.pop(mark)
	}
}

// value diffs two values at the current path.
func (d *differ) value(ov, nv bsoncore.Value) {
	switch {
	case ov.Type == nv.Type && bytes.Equal(ov.Data, nv.Data):
	case ov.Type == bsoncore.TypeEmbeddedDocument && nv.Type == bsoncore.TypeEmbeddedDocument:
		d.doc(ov.Document(), nv.Document())
	case ov.Type == bsoncore.TypeArray && nv.Type == bsoncore.TypeArray:
		d.array(ov.Array(), nv.Array())
	default:
		d.update(nv)
	}
}

// array diffs two arrays at the current path: element by element, then what was appended or
// cut.
func (d *differ) array(old, cur bsoncore.Array) {
	oldRest, n, nOld := elements(old), 0, 0
	for rest := elements(cur); len(rest) > 0; n++ {
		ne, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			break
		}
		rest = r
		mark := len(d.path)
		d.push(nil, n)
		if oe, r, ok := bsoncore.ReadElement(oldRest); ok {
			oldRest, nOld = r, nOld+1
			d.value(oe.Value(), ne.Value())
		} else {
			d.update(ne.Value())
		}
		d.pop(mark)
	}
	if len(oldRest) == 0 {
		return
	}
	idx, out := bsoncore.AppendDocumentElementStart(d.truncated, strconv.Itoa(d.nTrunc))
	out = bsoncore.AppendStringElement(out, "field", string(d.path))
	out = bsoncore.AppendInt32Element(out, "newSize", int32(n))
	d.truncated, _ = bsoncore.AppendDocumentEnd(out, idx)
	d.nTrunc++
	d.noteAmbiguous()
}

// update records the current path's new value.
func (d *differ) update(v bsoncore.Value) {
	d.updated = appendValueElement(d.updated, d.path, v)
	d.noteAmbiguous()
}

// appendValueElement appends an element named by key bytes, without converting them to a
// string.
func appendValueElement(dst, key []byte, v bsoncore.Value) []byte {
	dst = append(dst, byte(v.Type))
	dst = append(dst, key...)
	dst = append(dst, 0)
	return append(dst, v.Data...)
}

// noteAmbiguous records the current path's components in disambiguatedPaths when its dotted
// form is ambiguous: a field name along it is a number or holds a dot.
func (d *differ) noteAmbiguous() {
	amb := false
	for _, c := range d.stack {
		if c.index < 0 && (isNumeric(c.name) || bytes.IndexByte(c.name, '.') >= 0) {
			amb = true
		}
	}
	if !amb {
		return
	}
	aidx, out := bsoncore.AppendArrayElementStart(d.ambiguous, string(d.path))
	for i, c := range d.stack {
		if c.index >= 0 {
			out = bsoncore.AppendInt32Element(out, strconv.Itoa(i), int32(c.index))
		} else {
			out = bsoncore.AppendStringElement(out, strconv.Itoa(i), string(c.name))
		}
	}
	d.ambiguous, _ = bsoncore.AppendArrayEnd(out, aidx)
}

// isNumeric reports whether a field name is all digits (it reads as an array index).
func isNumeric(s []byte) bool {
	if len(s) == 0 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
