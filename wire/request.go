package wire

import (
	"slices"
	"strconv"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// AppendCommand appends to dst the command m carries as one document: the body, with each
// document sequence appended as an array field named by its identifier, so that
// {insert: "c", $db: "d"} plus sequence "documents" [{a: 1}] becomes
// {insert: "c", $db: "d", documents: [{a: 1}]}. Its size is computed first, so dst grows at
// most once. The result may exceed MaxBSONSize (sequences may carry up to MaxMessageSize).
func (m *OpMsg) AppendCommand(dst []byte) []byte {
	if len(m.Sequences) == 0 {
		return append(dst, m.Body...)
	}
	size := len(m.Body)
	for _, s := range m.Sequences {
		size += 1 + len(s.Identifier) + 1 + arraySize(s.Documents)
	}
	dst = slices.Grow(dst, size)
	start := len(dst)
	dst = append(dst, m.Body[:len(m.Body)-1]...)
	for _, s := range m.Sequences {
		dst = append(dst, 0x04)
		dst = append(dst, s.Identifier...)
		dst = append(dst, 0)
		dst = appendArray(dst, s.Documents)
	}
	dst = append(dst, 0)
	le.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// nextDoc splits the first document off concatenated documents; ok is false at the end or
// at bytes that are not a framed document (decoded sequences never have any).
func nextDoc(docs []byte) (doc, rest []byte, ok bool) {
	if len(docs) < 5 {
		return nil, nil, false
	}
	n := int(int32(le.Uint32(docs)))
	if n < 5 || n > len(docs) {
		return nil, nil, false
	}
	return docs[:n], docs[n:], true
}

// arraySize returns the size of the BSON array holding the concatenated documents docs.
func arraySize(docs []byte) int {
	size := 4 + 1
	for i := 0; ; i++ {
		doc, rest, ok := nextDoc(docs)
		if !ok {
			return size
		}
		size += 2 + digits(i) + len(doc) // type byte, key, NUL, document
		docs = rest
	}
}

// appendArray appends the concatenated documents docs as a BSON array value.
func appendArray(dst, docs []byte) []byte {
	start := len(dst)
	dst = le.AppendUint32(dst, 0)
	for i := 0; ; i++ {
		doc, rest, ok := nextDoc(docs)
		if !ok {
			break
		}
		dst = append(dst, 0x03)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, 0)
		dst = append(dst, doc...)
		docs = rest
	}
	dst = append(dst, 0)
	le.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// digits returns the number of decimal digits of i ≥ 0.
func digits(i int) int {
	n := 1
	for ; i >= 10; i /= 10 {
		n++
	}
	return n
}

// fillRequest sets req from m, a decoded OP_MSG or OP_QUERY on "<db>.$cmd". A body that
// must be rebuilt (sequences merged, OP_QUERY upconverted) is appended to *scratch, which
// may grow; otherwise req.Body aliases m's frame. Only an OP_QUERY carrying "$db" fails.
func (m *Message) fillRequest(req *Request, scratch *[]byte) *mongoerr.Error {
	req.RequestID = m.Header.RequestID
	switch m.Header.OpCode {
	case OpCodeMsg:
		req.Legacy = false
		req.MoreToCome = m.Msg.Flags&MoreToCome != 0
		req.ExhaustAllowed = m.Msg.Flags&ExhaustAllowed != 0
		if len(m.Msg.Sequences) == 0 {
			req.Body = m.Msg.Body
			return nil
		}
		*scratch = m.Msg.AppendCommand((*scratch)[:0])
		req.Body = *scratch
	case OpCodeQuery:
		req.Legacy = true
		req.MoreToCome = false
		req.ExhaustAllowed = false
		db, _ := commandDatabase(m.Query.FullCollectionName)
		body, buf, err := upconvertQuery((*scratch)[:0], m.Query.Query, db)
		*scratch = buf
		if err != nil {
			return err
		}
		req.Body = body
	}
	return nil
}
