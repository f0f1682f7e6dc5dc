package query

import "sync"

// maxRecycledBuf is the largest document buffer a stream gives back to docBufs: a stream
// that read a 16 MB document keeps its buffer to itself, and the garbage collector frees it.
const maxRecycledBuf = 64 << 10

// docBufs recycles the document buffers of streams whose caller copies every document before
// the next Next or Close (Query.RecycleBuffers): without it, each point read allocated a
// buffer the size of its document (issue 13).
var docBufs = sync.Pool{New: func() any { return new([]byte) }}

// takeBuf gives a recycling stream its document buffer from docBufs, once.
func (ss *ShardStream) takeBuf() {
	if !ss.recycle || ss.bufp != nil {
		return
	}
	ss.bufp = docBufs.Get().(*[]byte)
	ss.buf = (*ss.bufp)[:0]
}

// recycleBuf gives the stream's document buffer back to docBufs; Close calls it, after
// which nothing the stream returned may be read.
func (ss *ShardStream) recycleBuf() {
	if ss.bufp == nil {
		return
	}
	if cap(ss.buf) <= maxRecycledBuf {
		*ss.bufp = ss.buf[:0]
		docBufs.Put(ss.bufp)
	}
	ss.bufp, ss.buf = nil, nil
}
