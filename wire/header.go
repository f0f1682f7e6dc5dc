package wire

import (
	"encoding/binary"
	"strconv"
)

// OpCode is the opCode field of the message header: which kind of message follows it.
type OpCode int32

// Opcodes of the wire protocol. Only OpCodeMsg, OpCodeQuery (on "<db>.$cmd") and
// OpCodeCompressed are accepted from clients; OpCodeReply answers an OpCodeQuery. The others
// are listed so that logs can name them: MongoDB 5.1+ no longer accepts them, nor does this
// package.
const (
	OpCodeReply       OpCode = 1
	OpCodeUpdate      OpCode = 2001
	OpCodeInsert      OpCode = 2002
	OpCodeQuery       OpCode = 2004
	OpCodeGetMore     OpCode = 2005
	OpCodeDelete      OpCode = 2006
	OpCodeKillCursors OpCode = 2007
	OpCodeCompressed  OpCode = 2012
	OpCodeMsg         OpCode = 2013
)

// String returns MongoDB's name for the opcode ("OP_MSG"), or the number for unknown ones.
func (c OpCode) String() string {
	switch c {
	case OpCodeReply:
		return "OP_REPLY"
	case OpCodeUpdate:
		return "OP_UPDATE"
	case OpCodeInsert:
		return "OP_INSERT"
	case OpCodeQuery:
		return "OP_QUERY"
	case OpCodeGetMore:
		return "OP_GET_MORE"
	case OpCodeDelete:
		return "OP_DELETE"
	case OpCodeKillCursors:
		return "OP_KILL_CURSORS"
	case OpCodeCompressed:
		return "OP_COMPRESSED"
	case OpCodeMsg:
		return "OP_MSG"
	default:
		return "opcode " + strconv.Itoa(int(c))
	}
}

// HeaderSize is the size of the standard message header that starts every message.
const HeaderSize = 16

// le is the byte order of every integer on the wire.
var le = binary.LittleEndian

// Header is the standard message header: four little-endian int32s.
type Header struct {
	MessageLength int32 // total message size in bytes, this header included
	RequestID     int32 // the sender's identifier for this message
	ResponseTo    int32 // the RequestID this message answers; 0 in requests
	OpCode        OpCode
}

// ReadHeader decodes the header at the front of src and returns the bytes after it. ok is
// false when src is shorter than HeaderSize. It does not judge MessageLength.
func ReadHeader(src []byte) (h Header, rem []byte, ok bool) {
	if len(src) < HeaderSize {
		return Header{}, src, false
	}
	h = Header{
		MessageLength: int32(le.Uint32(src)),
		RequestID:     int32(le.Uint32(src[4:])),
		ResponseTo:    int32(le.Uint32(src[8:])),
		OpCode:        OpCode(le.Uint32(src[12:])),
	}
	return h, src[HeaderSize:], true
}

// AppendTo appends the 16 header bytes to dst, MessageLength as it is.
func (h Header) AppendTo(dst []byte) []byte {
	dst = le.AppendUint32(dst, uint32(h.MessageLength))
	dst = le.AppendUint32(dst, uint32(h.RequestID))
	dst = le.AppendUint32(dst, uint32(h.ResponseTo))
	return le.AppendUint32(dst, uint32(h.OpCode))
}

// appendHeaderStart appends a header whose length is patched later by finishMessage, and
// returns where the message starts.
func appendHeaderStart(dst []byte, requestID, responseTo int32, op OpCode) (start int, out []byte) {
	start = len(dst)
	return start, Header{RequestID: requestID, ResponseTo: responseTo, OpCode: op}.AppendTo(dst)
}

// finishMessage writes the length of the message that starts at start into its header.
func finishMessage(dst []byte, start int) []byte {
	le.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}
