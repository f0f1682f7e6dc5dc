package vector

import "fmt"

// Check verifies the graph's invariants: every link leads to another node of the graph that
// lives on the link's layer, at most once, a list holds at most its layer's links, and the
// entry point is a node of the top layer, which no node exceeds. It returns the first
// violation (wrapping ErrCorrupt), for validate and for a restored graph.
func (g *Graph) Check() error {
	top := -1
	for n := range int32(g.Len()) {
		levels := len(g.upper[n])
		top = max(top, levels)
		for l := 0; l <= levels; l++ {
			ls := g.neighbours(n, l)
			if len(ls) > g.maxLinks(l) {
				return fmt.Errorf("%w: node %d has %d links on layer %d, over %d", ErrCorrupt, n, len(ls), l, g.maxLinks(l))
			}
			for i, o := range ls {
				switch {
				case o < 0 || int(o) >= g.Len():
					return fmt.Errorf("%w: node %d links to node %d of %d on layer %d", ErrCorrupt, n, o, g.Len(), l)
				case o == n:
					return fmt.Errorf("%w: node %d links to itself on layer %d", ErrCorrupt, n, l)
				case len(g.upper[o]) < l:
					return fmt.Errorf("%w: node %d links on layer %d to node %d, which is not on it", ErrCorrupt, n, l, o)
				}
				for _, p := range ls[:i] {
					if p == o {
						return fmt.Errorf("%w: node %d links to node %d twice on layer %d", ErrCorrupt, n, o, l)
					}
				}
			}
		}
	}
	switch {
	case g.Len() == 0 && g.entry != -1, g.Len() > 0 && (g.entry < 0 || int(g.entry) >= g.Len()):
		return fmt.Errorf("%w: entry point %d of %d nodes", ErrCorrupt, g.entry, g.Len())
	case g.Len() > 0 && (len(g.upper[g.entry]) != g.top || top != g.top):
		return fmt.Errorf("%w: entry point on layer %d, top layer %d, highest node on %d", ErrCorrupt, len(g.upper[g.entry]), g.top, top)
	}
	return nil
}
