package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ProtocolError reports a message that breaks the wire protocol badly enough that MongoDB
// closes the connection over it: a bad length, sections that overrun the message, unknown
// required flags, a checksum mismatch, an opcode the server does not take, a compressed body
// that does not decompress. The server logs Reason and closes the connection.
type ProtocolError struct {
	Reason string
}

// Error implements error.
func (e *ProtocolError) Error() string { return "wire: " + e.Reason }

// protocolError returns a *ProtocolError with a formatted reason.
func protocolError(format string, args ...any) *ProtocolError {
	return &ProtocolError{Reason: fmt.Sprintf(format, args...)}
}

// Message is one decoded wire message: its header, and the fields of its opcode in the
// matching member (Msg for OP_MSG, Query for OP_QUERY, Reply for OP_REPLY, Compressed for
// OP_COMPRESSED). Byte slices alias the frame it was decoded from. A Message can be reused:
// Decode overwrites the member its opcode uses.
//
// For every frame that decodes without error, AppendTo reproduces it byte for byte.
type Message struct {
	Header     Header
	Msg        OpMsg
	Query      OpQuery
	Reply      OpReply
	Compressed OpCompressed
}

// ReadMessage reads one message from r and decodes it. The length in its header is checked
// against [HeaderSize, maxSize] before anything is allocated; the frame is then read into a
// buffer of exactly that size, which the message's slices alias.
//
// Errors: io.EOF when r ends cleanly before a message, io.ErrUnexpectedEOF for a truncated
// one, a *ProtocolError for a frame the connection must be closed over, and a
// *mongoerr.Error for a well-framed request to be answered with that error (invalid BSON, an
// oversized document, ...). With a *mongoerr.Error the returned message is non-nil and its
// Header (and Msg.Flags for OP_MSG) are valid, so the caller can answer it.
func ReadMessage(r *bufio.Reader, maxSize int) (*Message, error) {
	var hb [HeaderSize]byte
	if _, err := io.ReadFull(r, hb[:]); err != nil {
		return nil, err
	}
	n, err := checkLength(hb[:], maxSize)
	if err != nil {
		return nil, err
	}
	frame := make([]byte, n)
	copy(frame, hb[:])
	if _, err := io.ReadFull(r, frame[HeaderSize:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	m := new(Message)
	if err := m.Decode(frame, maxSize); err != nil {
		var perr *ProtocolError
		if errors.As(err, &perr) {
			return nil, err
		}
		return m, err
	}
	return m, nil
}

// checkLength returns the messageLength of the header at the front of hdr, or a
// *ProtocolError when it is outside [HeaderSize, maxSize].
func checkLength(hdr []byte, maxSize int) (int, error) {
	n := int(int32(le.Uint32(hdr)))
	if n < HeaderSize || n > maxSize {
		return 0, protocolError("message length %d is invalid: min %d, max %d", n, HeaderSize, maxSize)
	}
	return n, nil
}

// Decode decodes frame, one complete message whose header length equals len(frame), into m.
// maxSize bounds the decompressed size an OP_COMPRESSED may announce. Errors are as for
// ReadMessage; unknown and legacy opcodes (OP_INSERT, ...) are a *ProtocolError.
func (m *Message) Decode(frame []byte, maxSize int) error {
	h, body, ok := ReadHeader(frame)
	if !ok || int(h.MessageLength) != len(frame) {
		return protocolError("frame of %d bytes does not match its header", len(frame))
	}
	m.Header = h
	switch h.OpCode {
	case OpCodeMsg:
		return m.Msg.decode(frame, body)
	case OpCodeQuery:
		return m.Query.decode(body)
	case OpCodeReply:
		return m.Reply.decode(body)
	case OpCodeCompressed:
		return m.Compressed.decode(body, maxSize)
	default:
		return protocolError("unsupported opcode %s: MongoDB 5.1+ only accepts OP_MSG, and OP_QUERY for the handshake", h.OpCode)
	}
}

// AppendTo appends m, encoded, to dst. The message length is computed, not copied from
// Header; an OP_MSG with ChecksumPresent gets its CRC-32C computed.
func (m *Message) AppendTo(dst []byte) []byte {
	start, dst := appendHeaderStart(dst, m.Header.RequestID, m.Header.ResponseTo, m.Header.OpCode)
	switch m.Header.OpCode {
	case OpCodeMsg:
		dst = m.Msg.appendSections(dst)
		return finishOpMsg(dst, start, m.Msg.Flags)
	case OpCodeQuery:
		dst = m.Query.appendTo(dst)
	case OpCodeReply:
		dst = m.Reply.appendTo(dst)
	case OpCodeCompressed:
		dst = m.Compressed.appendTo(dst)
	}
	return finishMessage(dst, start)
}

// Decompress returns the message an OP_COMPRESSED m carries, decoded into a new Message
// whose slices alias a new buffer. Errors are as for Decode; a body that does not
// decompress to exactly UncompressedSize bytes is a *ProtocolError.
func (m *Message) Decompress() (*Message, error) {
	if m.Header.OpCode != OpCodeCompressed {
		return nil, fmt.Errorf("wire: Decompress called on %s", m.Header.OpCode)
	}
	c := &m.Compressed
	frame, err := c.appendOriginal(make([]byte, 0, HeaderSize+int(c.UncompressedSize)), m.Header)
	if err != nil {
		return nil, &ProtocolError{Reason: err.Error()}
	}
	inner := new(Message)
	return inner, inner.Decode(frame, len(frame))
}
