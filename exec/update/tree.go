package update

import (
	"sort"
	"strings"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// nodeKind tells the three kinds of update tree nodes apart.
type nodeKind uint8

const (
	// kindObject steps into a field of a document, or into an element of an array by index.
	kindObject nodeKind = iota + 1
	// kindArray applies its children to the elements of an array that match their array
	// filter ("$[<id>]") or to all of them ("$[]").
	kindArray
	// kindLeaf applies one operator.
	kindLeaf
)

// node is a node of the parsed update: the tree MongoDB calls UpdateObjectNode,
// UpdateArrayNode and the leaf nodes. Paths that share a prefix share nodes, which is how
// conflicting paths are found at compile time. Nodes are immutable after Compile.
type node struct {
	kind       nodeKind
	children   []child        // kindObject: by field name; kindArray: by identifier
	positional *node          // kindObject: the child at "$", applied at the query's match
	byName     map[string]int // kindObject with many children: name → index in children
	leaf       *leaf          // kindLeaf
}

// child is a named edge of the tree.
type child struct {
	name   string
	key    []byte       // name as bytes, for writing and path tracking
	index  int          // the array index name denotes (arrayIndex), -1 if none
	digits bool         // name is all digits: it creates array elements when its parent is an array
	filter *arrayFilter // children of kindArray nodes: the filter of the identifier, nil for "$[]"
	n      *node
}

// byNameThreshold is the number of children from which a node looks names up in a map.
const byNameThreshold = 8

// newChild returns the edge to n named name.
func newChild(name string, n *node) child {
	return child{name: name, key: []byte(name), index: arrayIndex(name), digits: allDigits(name), n: n}
}

// find returns the position of name in the sorted children, and whether it is there.
func (n *node) find(name string) (int, bool) {
	i := sort.Search(len(n.children), func(i int) bool {
		return compareFields(n.children[i].name, name) >= 0
	})
	return i, i < len(n.children) && n.children[i].name == name
}

// get returns the child named name ("$" is the positional child of an object node).
func (n *node) get(name string) *node {
	if n.kind == kindObject && isPositional(name) {
		return n.positional
	}
	if i, ok := n.find(name); ok {
		return n.children[i].n
	}
	return nil
}

// set adds a child; the caller has checked that name is free.
func (n *node) set(name string, c *node) {
	if n.kind == kindObject && isPositional(name) {
		n.positional = c
		return
	}
	i, _ := n.find(name)
	n.children = append(n.children, child{})
	copy(n.children[i+1:], n.children[i:])
	n.children[i] = newChild(name, c)
}

// finish prepares a parsed tree for applying, recursively: array children get their
// filters, object nodes with many children a name map.
func (n *node) finish(filters map[string]*arrayFilter) {
	if n.kind == kindLeaf {
		return
	}
	if n.kind == kindArray {
		for i := range n.children {
			n.children[i].filter = filters[n.children[i].name]
		}
	}
	if n.kind == kindObject && len(n.children) > byNameThreshold {
		n.byName = make(map[string]int, len(n.children))
		for i, c := range n.children {
			n.byName[c.name] = i
		}
	}
	for _, c := range n.children {
		c.n.finish(filters)
	}
	if n.positional != nil {
		n.positional.finish(filters)
	}
}

// insert adds lf at the path parts (path is the dotted form, for messages), creating the
// internal nodes on the way, as UpdateObjectNode::parseAndMerge does.
func (c *compiler) insert(parts []string, path string, lf *leaf) error {
	cur := c.root
	for i := 0; i < len(parts)-1; i++ {
		name, err := c.childName(parts, i, path)
		if err != nil {
			return err
		}
		_, nextIsFilter := arrayFilterID(parts[i+1])
		want := kindObject
		if nextIsFilter {
			want = kindArray
		}
		next := cur.get(name)
		if next == nil {
			next = &node{kind: want}
			cur.set(name, next)
		} else if next.kind != want {
			return errf(mongoerr.ConflictingUpdateOperators,
				"Updating the path '%s' would create a conflict at '%s'", path, strings.Join(parts[:i+1], "."))
		}
		cur = next
	}
	name, err := c.childName(parts, len(parts)-1, path)
	if err != nil {
		return err
	}
	if cur.get(name) != nil {
		return errf(mongoerr.ConflictingUpdateOperators,
			"Updating the path '%s' would create a conflict at '%s'", path, path)
	}
	cur.set(name, &node{kind: kindLeaf, leaf: lf})
	return nil
}

// childName returns the name of the edge for parts[i]: the identifier of an array filter
// component (checked against the array filters), the component itself otherwise.
func (c *compiler) childName(parts []string, i int, path string) (string, error) {
	id, ok := arrayFilterID(parts[i])
	if !ok {
		return parts[i], nil
	}
	if i == 0 {
		return "", errf(mongoerr.BadValue,
			"Cannot have array filter identifier (i.e. '$[<id>]') element in the first position in path '%s'", path)
	}
	if id == "" {
		return "", nil
	}
	f, ok := c.filters[id]
	if !ok {
		return "", errf(mongoerr.BadValue, "No array filter found for identifier '%s' in path '%s'", id, path)
	}
	f.used = true
	return id, nil
}

// checkPositional enforces at most one "$" per path, never first.
func checkPositional(parts []string, path string) (bool, error) {
	count, first := 0, -1
	for i, p := range parts {
		if isPositional(p) {
			if count == 0 {
				first = i
			}
			count++
		}
	}
	if count > 1 {
		return true, errf(mongoerr.BadValue, "Too many positional (i.e. '$') elements found in path '%s'", path)
	}
	if count == 1 && first == 0 {
		return true, errf(mongoerr.BadValue,
			"Cannot have positional (i.e. '$') element in the first position in path '%s'", path)
	}
	return count == 1, nil
}
