package vector

import "slices"

// selectNeighbours is the paper's SELECT-NEIGHBORS-HEURISTIC (Algorithm 4): of cands, sorted
// nearest first by distance to a base node, it keeps up to m, a candidate only when it is
// nearer to the base than to every one kept before it, so that the links point in different
// directions (and a cluster's far side stays reachable). With g.keepPruned the nearest
// candidates it discarded fill what room is left. It appends to out and reorders cands.
func (g *Graph) selectNeighbours(cands []scored, m int, out []int32) []int32 {
	if len(cands) <= m {
		for _, c := range cands {
			out = append(out, c.node)
		}
		return out
	}
	first := len(out)
	pruned := 0 // cands[:pruned] holds the discarded ones, in order (cands is scratch)
	for _, c := range cands {
		if len(out)-first >= m {
			break
		}
		cv := g.Vector(c.node)
		keep := true
		for _, o := range out[first:] {
			if g.dist(cv, o) < c.dist {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c.node)
		} else {
			cands[pruned] = c
			pruned++
		}
	}
	if !g.keepPruned {
		return out
	}
	for _, c := range cands[:pruned] {
		if len(out)-first >= m {
			break
		}
		out = append(out, c.node)
	}
	return out
}

// sortScored sorts s nearest first.
func sortScored(s []scored) {
	slices.SortFunc(s, func(a, b scored) int {
		switch {
		case a.dist < b.dist:
			return -1
		case a.dist > b.dist:
			return 1
		}
		return int(a.node - b.node)
	})
}
