package changes

import (
	"bytes"
	"strconv"
	"strings"

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
func Diff(old, cur bsoncore.Document) bsoncore.Document {
	var d differ
	d.doc("", old, cur)
	out := make([]byte, 0, len(d.updated)+len(d.removed)+len(d.truncated)+96)
	idx, out := bsoncore.AppendDocumentStart(out)
	uidx, out := bsoncore.AppendDocumentElementStart(out, "updatedFields")
	out = append(out, d.updated...)
	out, _ = bsoncore.AppendDocumentEnd(out, uidx)
	ridx, out := bsoncore.AppendArrayElementStart(out, "removedFields")
	for i, p := range d.removed {
		out = bsoncore.AppendStringElement(out, strconv.Itoa(i), p)
	}
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

// component is one step of a path: a field name, or an array index (index >= 0).
type component struct {
	name  string
	index int
}

// noteAmbiguous records path's components in disambiguatedPaths when its dotted form is
// ambiguous.
func (d *differ) noteAmbiguous(path string) {
	amb := false
	for _, c := range d.stack {
		if c.index < 0 && (isNumeric(c.name) || strings.Contains(c.name, ".")) {
			amb = true
		}
	}
	if !amb {
		return
	}
	aidx, out := bsoncore.AppendArrayElementStart(d.ambiguous, path)
	for i, c := range d.stack {
		if c.index >= 0 {
			out = bsoncore.AppendInt32Element(out, strconv.Itoa(i), int32(c.index))
		} else {
			out = bsoncore.AppendStringElement(out, strconv.Itoa(i), c.name)
		}
	}
	d.ambiguous, _ = bsoncore.AppendArrayEnd(out, aidx)
}

// isNumeric reports whether a field name is all digits (it reads as an array index).
func isNumeric(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// differ accumulates a diff: updated holds the elements of updatedFields, truncated the
// elements of truncatedArrays.
type differ struct {
	updated   []byte
	removed   []string
	truncated []byte
	nTrunc    int
	// stack is the path being diffed, by component; ambiguous holds the elements of
	// disambiguatedPaths.
	stack     []component
	ambiguous []byte
}

// doc diffs two documents at path prefix ("" at the top, else "a.b.").
func (d *differ) doc(prefix string, old, cur bsoncore.Document) {
	oldElems, _ := old.Elements()
	newElems, _ := cur.Elements()
	for _, ne := range newElems {
		key := ne.Key()
		d.stack = append(d.stack, component{name: key, index: -1})
		if ov, err := old.LookupErr(key); err != nil {
			d.update(prefix+key, ne.Value())
		} else {
			d.value(prefix+key, ov, ne.Value())
		}
		d.stack = d.stack[:len(d.stack)-1]
	}
	for _, oe := range oldElems {
		if _, err := cur.LookupErr(oe.Key()); err != nil {
			d.stack = append(d.stack, component{name: oe.Key(), index: -1})
			d.removed = append(d.removed, prefix+oe.Key())
			d.noteAmbiguous(prefix + oe.Key())
			d.stack = d.stack[:len(d.stack)-1]
		}
	}
}

// value diffs two values at path.
func (d *differ) value(path string, ov, nv bsoncore.Value) {
	switch {
	case ov.Type == nv.Type && bytes.Equal(ov.Data, nv.Data):
	case ov.Type == bsoncore.TypeEmbeddedDocument && nv.Type == bsoncore.TypeEmbeddedDocument:
		d.doc(path+".", ov.Document(), nv.Document())
	case ov.Type == bsoncore.TypeArray && nv.Type == bsoncore.TypeArray:
		d.array(path, ov.Array(), nv.Array())
	default:
		d.update(path, nv)
	}
}

// array diffs two arrays at path: element by element, then what was appended or cut.
func (d *differ) array(path string, old, cur bsoncore.Array) {
	ovs, _ := old.Values()
	nvs, _ := cur.Values()
	for i, nv := range nvs {
		p := path + "." + strconv.Itoa(i)
		d.stack = append(d.stack, component{index: i})
		if i < len(ovs) {
			d.value(p, ovs[i], nv)
		} else {
			d.update(p, nv)
		}
		d.stack = d.stack[:len(d.stack)-1]
	}
	if len(nvs) < len(ovs) {
		idx, out := bsoncore.AppendDocumentElementStart(d.truncated, strconv.Itoa(d.nTrunc))
		out = bsoncore.AppendStringElement(out, "field", path)
		out = bsoncore.AppendInt32Element(out, "newSize", int32(len(nvs)))
		d.truncated, _ = bsoncore.AppendDocumentEnd(out, idx)
		d.nTrunc++
		d.noteAmbiguous(path)
	}
}

// update records path's new value.
func (d *differ) update(path string, v bsoncore.Value) {
	d.updated = bsoncore.AppendValueElement(d.updated, path, v)
	d.noteAmbiguous(path)
}
