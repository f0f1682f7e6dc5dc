package wire

import "sync"

// bufClasses are the capacities the buffer pool keeps, from 4 KiB to 4 MiB by powers of 4.
// Larger buffers are allocated at their exact size and left to the garbage collector, so an
// occasional 48 MB message does not pin 48 MB per pooled slot.
var bufClasses = [...]int{4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}

// largestPooled is the capacity of the largest class.
var largestPooled = bufClasses[len(bufClasses)-1]

// bufPools holds one pool of *[]byte per class.
var bufPools [len(bufClasses)]sync.Pool

// getBuf returns an empty buffer with capacity at least n, from the pool when n fits a
// class. The pointer is what putBuf takes back, so that pooling allocates nothing.
func getBuf(n int) *[]byte {
	for i, c := range bufClasses {
		if n <= c {
			if b, _ := bufPools[i].Get().(*[]byte); b != nil {
				return b
			}
			b := make([]byte, 0, c)
			return &b
		}
	}
	b := make([]byte, 0, n)
	return &b
}

// putBuf returns b to the class its capacity fills; nil, tiny and huge buffers are dropped.
// The caller must not use b afterwards.
func putBuf(b *[]byte) {
	if b == nil {
		return
	}
	c := cap(*b)
	if c > 2*largestPooled {
		return
	}
	for i := len(bufClasses) - 1; i >= 0; i-- {
		if c >= bufClasses[i] {
			*b = (*b)[:0]
			bufPools[i].Put(b)
			return
		}
	}
}
