package update

import "github.com/cleavedb/cleave/wire/mongoerr"

// mergeNodes merges two subtrees that apply to the same element: the positional child with
// the child its match names ("a.$.b" and "a.0.c" when the query matched element 0), or the
// children of an array node whose filters both match an element. Two operators on the same
// path conflict (UpdateNode::createUpdateNodeByMerging). path is the element's path, for the
// message. Merging is rare, so it allocates a fresh subtree each time.
func mergeNodes(l, r *node, path string) (*node, error) {
	switch {
	case l.kind == kindObject && r.kind == kindObject:
		children, err := mergeChildren(l.children, r.children, path, false)
		if err != nil {
			return nil, err
		}
		m := &node{kind: kindObject, children: children}
		switch {
		case l.positional != nil && r.positional != nil:
			if m.positional, err = mergeNodes(l.positional, r.positional, path+".$"); err != nil {
				return nil, err
			}
		case l.positional != nil:
			m.positional = l.positional
		default:
			m.positional = r.positional
		}
		return m, nil
	case l.kind == kindArray && r.kind == kindArray:
		children, err := mergeChildren(l.children, r.children, path, true)
		if err != nil {
			return nil, err
		}
		return &node{kind: kindArray, children: children}, nil
	}
	return nil, errf(mongoerr.ConflictingUpdateOperators, "Update created a conflict at '%s'", path)
}

// mergeChildren merges two sorted child lists; children of array nodes show as "$[<id>]" in
// conflict paths.
func mergeChildren(l, r []child, path string, wrap bool) ([]child, error) {
	out := make([]child, 0, len(l)+len(r))
	i, j := 0, 0
	for i < len(l) || j < len(r) {
		var c int
		switch {
		case i == len(l):
			c = 1
		case j == len(r):
			c = -1
		default:
			c = compareFields(l[i].name, r[j].name)
		}
		switch {
		case c < 0:
			out = append(out, l[i])
			i++
		case c > 0:
			out = append(out, r[j])
			j++
		default:
			name := l[i].name
			if wrap {
				name = "$[" + name + "]"
			}
			m, err := mergeNodes(l[i].n, r[j].n, path+"."+name)
			if err != nil {
				return nil, err
			}
			merged := l[i]
			merged.n = m
			out = append(out, merged)
			i++
			j++
		}
	}
	return out, nil
}
