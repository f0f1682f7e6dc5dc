package vector

// scored is a node with its distance to a query.
type scored struct {
	node int32
	dist float32
}

// candHeap is a min-heap by distance: the next candidate to expand.
type candHeap []scored

func (h *candHeap) push(s scored) {
	*h = append(*h, s)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].dist <= a[i].dist {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *candHeap) pop() scored {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a[l].dist < a[m].dist {
			m = l
		}
		if r < len(a) && a[r].dist < a[m].dist {
			m = r
		}
		if m == i {
			break
		}
		a[m], a[i] = a[i], a[m]
		i = m
	}
	*h = a
	return top
}

// resultHeap is a max-heap by distance: the farthest of the results kept so far on top.
type resultHeap []scored

func (h *resultHeap) push(s scored) {
	*h = append(*h, s)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].dist >= a[i].dist {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *resultHeap) pop() scored {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	*h = a[:last]
	h.down(0)
	return top
}

// down restores the heap below i after a[i] got nearer.
func (h resultHeap) down(i int) {
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h[l].dist > h[m].dist {
			m = l
		}
		if r < len(h) && h[r].dist > h[m].dist {
			m = r
		}
		if m == i {
			return
		}
		h[m], h[i] = h[i], h[m]
		i = m
	}
}

// distHeap is a max-heap of distances: the k smallest seen, the largest of them first.
type distHeap []float32

// offer adds d, keeping the k smallest.
func (h *distHeap) offer(d float32, k int) {
	x := *h
	if len(x) == k {
		if d >= x[0] {
			return
		}
		x[0] = d
	} else {
		x = append(x, d)
		for i := len(x) - 1; i > 0; { // up
			p := (i - 1) / 2
			if x[p] >= x[i] {
				break
			}
			x[p], x[i] = x[i], x[p]
			i = p
		}
		*h = x
		return
	}
	for i := 0; ; { // down
		l, big := 2*i+1, i
		if l < len(x) && x[l] > x[big] {
			big = l
		}
		if r := l + 1; r < len(x) && x[r] > x[big] {
			big = r
		}
		if big == i {
			return
		}
		x[i], x[big] = x[big], x[i]
		i = big
	}
}
