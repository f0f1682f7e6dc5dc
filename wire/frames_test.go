package wire

import (
	"hash/crc32"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Builders of raw frames for the tables: each returns the exact bytes a client would send,
// malformed ones included, so that tests and fuzz seeds share them.

// mustDoc marshals d (a bson.D or bson.M) and panics on failure; test inputs are constants.
func mustDoc(d any) bsoncore.Document {
	b, err := bson.Marshal(d)
	if err != nil {
		panic(err)
	}
	return b
}

// d is shorthand for a bson.D from alternating keys and values.
func d(kv ...any) bsoncore.Document {
	var out bson.D
	for i := 0; i < len(kv); i += 2 {
		out = append(out, bson.E{Key: kv[i].(string), Value: kv[i+1]})
	}
	return mustDoc(out)
}

// sec0 is a kind-0 section holding doc.
func sec0(doc []byte) []byte { return append([]byte{0}, doc...) }

// sec1 is a kind-1 section named id holding docs.
func sec1(id string, docs ...[]byte) []byte {
	size := 4 + len(id) + 1
	for _, x := range docs {
		size += len(x)
	}
	b := []byte{1}
	b = le.AppendUint32(b, uint32(size))
	b = append(b, id...)
	b = append(b, 0)
	for _, x := range docs {
		b = append(b, x...)
	}
	return b
}

// rawMsg is an OP_MSG with the given flags and raw sections; a checksum is appended when
// flags asks for one (badSum corrupts it).
func rawMsg(requestID int32, flags MsgFlags, sections ...[]byte) []byte {
	start, b := appendHeaderStart(nil, requestID, 0, OpCodeMsg)
	b = le.AppendUint32(b, uint32(flags))
	for _, s := range sections {
		b = append(b, s...)
	}
	return finishOpMsg(b, start, flags)
}

// withBadChecksum flips the checksum of an OP_MSG frame.
func withBadChecksum(frame []byte) []byte {
	out := append([]byte(nil), frame...)
	out[len(out)-1] ^= 0xff
	return out
}

// rawFrame is a header with opcode op around body, with its length as given (or computed
// when length is -1).
func rawFrame(length int32, requestID int32, op OpCode, body []byte) []byte {
	if length == -1 {
		length = int32(HeaderSize + len(body))
	}
	b := Header{MessageLength: length, RequestID: requestID, OpCode: op}.AppendTo(nil)
	return append(b, body...)
}

// compressed wraps frame in an OP_COMPRESSED.
func compressed(c Compressor, frame []byte) []byte {
	b, err := AppendCompressed(nil, c, frame)
	if err != nil {
		panic(err)
	}
	return b
}

// rawCompressed is an OP_COMPRESSED with explicit fields, for malformed cases.
func rawCompressed(requestID int32, orig OpCode, size int32, c Compressor, data []byte) []byte {
	body := le.AppendUint32(nil, uint32(orig))
	body = le.AppendUint32(body, uint32(size))
	body = append(body, byte(c))
	return rawFrame(-1, requestID, OpCodeCompressed, append(body, data...))
}

// withLength rewrites a document's length field.
func withLength(doc []byte, n int32) []byte {
	out := append([]byte(nil), doc...)
	le.PutUint32(out, uint32(n))
	return out
}

// nested returns {a: {a: ... {x: 1}}} with depth objects below the top level.
func nested(depth int) []byte {
	inner := d("x", int32(1))
	for range depth - 1 {
		inner = d("a", bson.Raw(inner))
	}
	return d("a", bson.Raw(inner), "$db", "test")
}

// corrupt returns doc with the byte at offset i replaced by v.
func corrupt(doc []byte, i int, v byte) []byte {
	out := append([]byte(nil), doc...)
	out[i] = v
	return out
}

// hexish renders a frame compactly for failure messages.
func hexish(b []byte) string {
	const maxBytes = 64
	var sb strings.Builder
	for i, c := range b {
		if i == maxBytes {
			sb.WriteString("...")
			break
		}
		sb.WriteString("0123456789abcdef"[c>>4 : c>>4+1])
		sb.WriteString("0123456789abcdef"[c&15 : c&15+1])
	}
	return sb.String()
}

// checksum returns the CRC-32C MongoDB puts after an OP_MSG's sections.
func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }
