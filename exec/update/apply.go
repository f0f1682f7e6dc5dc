package update

import (
	"bytes"
	"strings"
	"sync"
	"time"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// applier holds the state of one Apply of an operator update. The tree and the document are
// walked together: untouched elements are copied as raw bytes, touched documents and arrays
// are rebuilt in place in the output, created fields are appended at the end of their
// document in the tree's order, which is MongoDB's field order.
type applier struct {
	u         *Update
	doc       []byte // the original document
	pos       int    // the query's positional match, -1 if none
	posName   string
	posKey    []byte
	inserting bool
	changes   int // operators that changed something; none is MongoDB's noop

	now     time.Time // $currentDate's clock, read once per document
	haveNow bool

	path   [][]byte // components of the current path
	taken  int      // how many leading components of path exist in the document
	arrays [][]byte // names of the existing arrays enclosing the current position

	seen    []bool           // scratch: children of a node already matched by a field
	seq     []child          // scratch: children of nodes with a positional child
	vals    []bsoncore.Value // scratch: elements of an array an operator rewrites
	out     []bsoncore.Value // scratch: the elements it produces
	scratch []byte           // scratch: array filter matching, element moves
	valBuf  []byte           // scratch: values built by operators
	numBuf  [16]byte         // scratch: numbers, dates and timestamps
	keys    []byte           // arena for array keys past the table
}

// applierPool recycles appliers and their scratch buffers.
var applierPool = sync.Pool{New: func() any { return new(applier) }}

// target describes what a node applies to: an existing value, or a path to create.
type target struct {
	exists  bool
	t       bsoncore.Type
	v       []byte
	inArray bool // the value is an array element

	// For paths to create: whether the nearest existing element lets the path be created
	// (createPathAt) and traversed (checkViability), and that element, for messages.
	creatable   bool
	traversable bool
	baseKey     []byte
	baseT       bsoncore.Type
	baseV       []byte
}

// existing returns the target for an existing value.
func existing(t bsoncore.Type, v []byte, inArray bool) target {
	return target{exists: true, t: t, v: v, inArray: inArray}
}

// Apply appends to dst the document the update makes of doc and reports whether it changed
// (MongoDB counts nModified only then; an unchanged document is appended as is). pos is the
// array position the query matched for the positional "$" operator (match.MatchPos), -1 if
// none; inserting is true when the document is being inserted by an upsert, so that
// $setOnInsert applies. On error dst is returned unchanged.
func (u *Update) Apply(dst []byte, doc bsoncore.Document, pos int, inserting bool) ([]byte, bool, error) {
	if _, ok := docBody(doc); !ok || int(readI32(doc)) != len(doc) {
		return dst, false, errInvalidBSON("document")
	}
	switch u.kind {
	case kindReplacement:
		return u.applyReplacement(dst, doc, inserting)
	case kindPipeline:
		return u.applyPipeline(dst, doc)
	}
	a := applierPool.Get().(*applier)
	a.reset(u, doc, pos, inserting)
	out, changed, err := a.run(dst)
	a.u, a.doc = nil, nil
	applierPool.Put(a)
	return out, changed, err
}

// reset prepares a pooled applier for one document.
func (a *applier) reset(u *Update, doc []byte, pos int, inserting bool) {
	a.u, a.doc, a.pos, a.inserting = u, doc, pos, inserting
	a.changes, a.haveNow = 0, false
	a.path, a.taken, a.arrays = a.path[:0], 0, a.arrays[:0]
	a.seen, a.seq, a.vals, a.keys = a.seen[:0], a.seq[:0], a.vals[:0], a.keys[:0]
	a.posName, a.posKey = "", nil
	if pos >= 0 {
		a.posKey = a.indexKey(pos)
		a.posName = string(a.posKey)
	}
}

// run applies the update to the whole document.
func (a *applier) run(dst []byte) ([]byte, bool, error) {
	start := len(dst)
	out, err := a.objectOnDoc(dst, a.u.root, nil, a.doc, true)
	if err != nil {
		return dst, false, err
	}
	if a.changes == 0 {
		return append(out[:start], a.doc...), false, nil
	}
	out = moveIDFirst(out, start)
	if bytes.Equal(out[start:], a.doc) {
		return out, false, nil
	}
	if len(out)-start > maxUserDocSize {
		return dst, false, errf(codeDocTooLargeUpdate, "Resulting document after update is larger than %d", maxUserDocSize)
	}
	return out, true, nil
}

// push enters a path component; exists tells whether it is in the document.
func (a *applier) push(key []byte, exists bool) {
	a.path = append(a.path, key)
	if exists && a.taken == len(a.path)-1 {
		a.taken++
	}
}

// pop leaves the last path component.
func (a *applier) pop() {
	a.path = a.path[:len(a.path)-1]
	a.taken = min(a.taken, len(a.path))
}

// pathString returns the current path in dotted form.
func (a *applier) pathString() string { return joinPath(a.path) }

// joinPath joins path components with dots.
func joinPath(parts [][]byte) string {
	var sb strings.Builder
	for i, p := range parts {
		if i > 0 {
			sb.WriteByte('.')
		}
		sb.Write(p)
	}
	return sb.String()
}

// indexKey returns the field name of array index i.
func (a *applier) indexKey(i int) []byte {
	if i < maxIndexKeys {
		return indexKeys[i]
	}
	start := len(a.keys)
	a.keys = append(a.keys, itoa(i)...)
	return a.keys[start:len(a.keys):len(a.keys)]
}

// applyNode applies a node to its target, appending the resulting element (named key) to
// dst. emitted is false when nothing was written: a removed field, or a path not created.
func (a *applier) applyNode(dst []byte, n *node, key []byte, tgt target) ([]byte, bool, error) {
	switch n.kind {
	case kindLeaf:
		return a.applyLeaf(dst, n.leaf, key, tgt)
	case kindArray:
		out, err := a.arrayNode(dst, n, key, tgt)
		return out, err == nil, err
	}
	if !tgt.exists {
		return a.objectCreate(dst, n, key, tgt)
	}
	switch tgt.t {
	case bsoncore.TypeEmbeddedDocument:
		out, err := a.objectOnDoc(dst, n, key, tgt.v, false)
		return out, err == nil, err
	case bsoncore.TypeArray:
		out, err := a.objectOnArray(dst, n, key, tgt.v)
		return out, err == nil, err
	}
	// A scalar in the way: every child is a path that cannot be created, so the children
	// fail or do nothing and the scalar stays.
	out, _, err := a.objectCreate(dst, n, key, target{baseKey: key, baseT: tgt.t, baseV: tgt.v})
	if err != nil {
		return out, false, err
	}
	return appendElem(out, tgt.t, key, tgt.v), true, nil
}

// sequence returns the children of an object node in the order MongoDB applies them: the
// positional child, named after the query's match, joins them (merged with a child of the
// same name, or before the first child whose name sorts after it bytewise). The result may
// live in a.seq; the caller truncates a.seq to its length before the call when done.
func (a *applier) sequence(n *node) ([]child, error) {
	if n.positional == nil {
		return n.children, nil
	}
	if a.pos < 0 {
		return nil, errPositionalNoMatch()
	}
	mark := len(a.seq)
	pos := child{name: a.posName, key: a.posKey, index: a.pos, digits: true, n: n.positional}
	inserted := false
	for _, c := range n.children {
		if !inserted && c.name == a.posName {
			merged, err := mergeNodes(n.positional, c.n, a.pathString()+sep(a.path)+a.posName)
			if err != nil {
				return nil, err
			}
			pos.n = merged
			a.seq = append(a.seq, pos)
			inserted = true
			continue
		}
		if !inserted && a.posName < c.name {
			a.seq = append(a.seq, pos)
			inserted = true
		}
		a.seq = append(a.seq, c)
	}
	if !inserted {
		a.seq = append(a.seq, pos)
	}
	return a.seq[mark:], nil
}

// sep returns "." when a path is not empty.
func sep(path [][]byte) string {
	if len(path) > 0 {
		return "."
	}
	return ""
}

// objectOnDoc applies an object node to an existing document: the document's fields in
// their order, the named ones updated in place, then the fields to create in tree order.
// root marks the top-level document, written without an element header.
func (a *applier) objectOnDoc(dst []byte, n *node, key, doc []byte, root bool) ([]byte, error) {
	body, ok := docBody(doc)
	if !ok {
		return dst, errInvalidBSON("document")
	}
	seqMark, seenMark := len(a.seq), len(a.seen)
	defer func() { a.seq, a.seen = a.seq[:seqMark], a.seen[:seenMark] }()
	seq, err := a.sequence(n)
	if err != nil {
		return dst, err
	}
	for range seq {
		a.seen = append(a.seen, false)
	}
	seen := a.seen[seenMark:]
	dst, at := startDoc(dst, bsoncore.TypeEmbeddedDocument, key, root)
	// Untouched elements are copied in runs, up to the next element a child updates.
	copied := 0
	for off := 0; off < len(body); {
		t, klen, size, ok := scanElem(body[off:])
		if !ok {
			return dst, errInvalidBSON("document")
		}
		raw := body[off : off+size]
		off += size
		k := raw[1 : 1+klen]
		i := findChild(n, seq, seen, k)
		if i < 0 {
			continue
		}
		dst = append(dst, body[copied:off-size]...)
		copied = off
		seen[i] = true
		if dst, err = a.updateField(dst, seq[i], k, t, raw[2+klen:], root); err != nil {
			return dst, a.treeOrderError(seq, key, doc, body, root, err)
		}
	}
	dst = append(dst, body[copied:]...)
	base := target{creatable: true, traversable: true, baseKey: key, baseT: bsoncore.TypeEmbeddedDocument, baseV: doc}
	for i, c := range seq {
		if seen[i] {
			continue
		}
		if dst, err = a.createField(dst, c, base, root); err != nil {
			return dst, a.treeOrderError(seq, key, doc, body, root, err)
		}
	}
	return endDoc(dst, at), nil
}

// updateField applies a child to an existing field of a document.
func (a *applier) updateField(dst []byte, c child, k []byte, t bsoncore.Type, v []byte, root bool) ([]byte, error) {
	before := a.changes
	a.push(k, true)
	dst, _, err := a.applyNode(dst, c.n, k, existing(t, v, false))
	a.pop()
	if err == nil && root && a.changes != before && k[0] == '$' && !a.inserting && writesValue(c.n) {
		err = errDollarField(string(k), string(k))
	}
	return dst, err
}

// createField applies a child to a field a document lacks.
func (a *applier) createField(dst []byte, c child, base target, root bool) ([]byte, error) {
	a.push(c.key, false)
	dst, emitted, err := a.applyNode(dst, c.n, c.key, base)
	a.pop()
	if err == nil && root && emitted && c.name[0] == '$' && !a.inserting {
		err = errDollarField(c.name, c.name)
	}
	return dst, err
}

// treeOrderError returns the error MongoDB meets first. The streaming pass visits existing
// fields in document order; MongoDB applies children in tree order, so when the pass fails
// the children are applied again, in MongoDB's order and into a scratch buffer, and the
// first failure is reported. Errors are rare: this costs nothing on success.
func (a *applier) treeOrderError(seq []child, key, doc, body []byte, root bool, first error) error {
	base := target{creatable: true, traversable: true, baseKey: key, baseT: bsoncore.TypeEmbeddedDocument, baseV: doc}
	for _, c := range seq {
		var err error
		if e, ok := findField(body, c.name); ok {
			_, err = a.updateField(nil, c, e.key, e.t, e.val, root)
		} else {
			_, err = a.createField(nil, c, base, root)
		}
		if err != nil {
			return err
		}
	}
	return first
}

// writesValue reports whether a node writes the value of the field it sits at, so that
// storage validation looks at the field's name: operators that only remove, or nodes that
// update deeper fields, do not.
func writesValue(n *node) bool {
	if n.kind != kindLeaf {
		return false
	}
	switch n.leaf.op {
	case opUnset, opRenameSource, opPop, opPull, opPullAll:
		return false
	}
	return true
}

// findChild returns the position in seq of the child named name not yet matched, or -1.
func findChild(n *node, seq []child, seen []bool, name []byte) int {
	if n.byName != nil && len(seq) == len(n.children) && n.positional == nil {
		if i, ok := n.byName[string(name)]; ok && !seen[i] {
			return i
		}
		return -1
	}
	for i := range seq {
		if !seen[i] && seq[i].name == string(name) {
			return i
		}
	}
	return -1
}

// objectCreate applies an object node to a path that does not exist: the children are
// applied in order to paths that do not exist either, and the document is written only if
// one of them created something.
func (a *applier) objectCreate(dst []byte, n *node, key []byte, tgt target) ([]byte, bool, error) {
	seqMark := len(a.seq)
	defer func() { a.seq = a.seq[:seqMark] }()
	seq, err := a.sequence(n)
	if err != nil {
		return dst, false, err
	}
	start := len(dst)
	dst, at := startDoc(dst, bsoncore.TypeEmbeddedDocument, key, false)
	created := false
	for _, c := range seq {
		a.push(c.key, false)
		var emitted bool
		dst, emitted, err = a.applyNode(dst, c.n, c.key, tgt)
		a.pop()
		if err != nil {
			return dst[:start], false, err
		}
		created = created || emitted
	}
	if !created {
		return dst[:start], false, nil
	}
	return endDoc(dst, at), true, nil
}

// errDollarField is storage validation's error for a top-level field starting with '$'.
func errDollarField(name, full string) error {
	return errf(mongoerr.DollarPrefixedFieldName, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the "+
		"context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.",
		name, full)
}

// moveIDFirst moves the _id field of the document at buf[start:] to the front, as MongoDB
// does after every update (ensureIdFieldIsFirst).
func moveIDFirst(buf []byte, start int) []byte {
	body, ok := docBody(buf[start:])
	if !ok {
		return buf
	}
	if first, _, ok := readElem(body); !ok || string(first.key) == "_id" {
		return buf
	}
	id, ok := findField(body, "_id")
	if !ok {
		return buf
	}
	out := make([]byte, 0, len(body))
	out = append(out, id.raw...)
	for len(body) > 0 {
		e, rest, _ := readElem(body)
		if &e.raw[0] != &id.raw[0] {
			out = append(out, e.raw...)
		}
		body = rest
	}
	copy(buf[start+4:], out)
	return buf
}
