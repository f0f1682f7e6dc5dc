package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestReadMessage decodes every frame of the table and checks the outcome; whatever decodes
// must re-encode to the same bytes.
func TestReadMessage(t *testing.T) {
	for _, tc := range messageCases {
		t.Run(tc.name, func(t *testing.T) {
			msg, err := ReadMessage(bufio.NewReader(bytes.NewReader(tc.raw)), MaxMessageSize)
			checkDecodeOutcome(t, tc.decode, tc.code, err)
			switch tc.decode {
			case ok:
				if got := msg.AppendTo(nil); !bytes.Equal(got, tc.raw) {
					t.Fatalf("re-encoding changed the message:\n got %s\nwant %s", hexish(got), hexish(tc.raw))
				}
			case answered:
				if msg == nil || msg.Header.RequestID != int32(le.Uint32(tc.raw[4:])) {
					t.Fatalf("an answerable error must come with the message header, got %+v", msg)
				}
			case protocol, truncated:
				if msg != nil {
					t.Fatalf("got a message with a fatal error")
				}
			}
		})
	}
}

// checkDecodeOutcome fails t unless err is what want promises.
func checkDecodeOutcome(t *testing.T, want outcome, code mongoerr.Code, err error) {
	t.Helper()
	var perr *ProtocolError
	switch want {
	case ok:
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
	case protocol:
		if !errors.As(err, &perr) {
			t.Fatalf("want a *ProtocolError, got %T %v", err, err)
		}
	case truncated:
		if !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("want io.ErrUnexpectedEOF, got %v", err)
		}
	case answered:
		merr := mongoerr.As(err)
		if merr == nil || merr.Code != code {
			t.Fatalf("want code %d, got %v", code, err)
		}
	}
}

// TestMessageRequest checks the body a handler sees for every frame the server answers:
// sequences merged, OP_QUERY upconverted, compressed messages unwrapped.
func TestMessageRequest(t *testing.T) {
	for _, tc := range messageCases {
		if tc.body == nil {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			var m Message
			if err := m.Decode(tc.raw, MaxMessageSize); err != nil {
				t.Fatal(err)
			}
			if m.Header.OpCode == OpCodeCompressed {
				inner, err := m.Decompress()
				if err != nil {
					t.Fatal(err)
				}
				if got := inner.AppendTo(nil); !bytes.Equal(got, mustDecompress(t, &m)) {
					t.Fatal("inner message does not re-encode")
				}
				m = *inner
			}
			var req Request
			scratch := new([]byte)
			if err := m.fillRequest(&req, scratch); err != nil {
				t.Fatal(err)
			}
			if err := req.Body.Validate(); err != nil {
				t.Fatalf("body is not valid BSON: %v", err)
			}
			if !bytes.Equal(req.Body, tc.body) {
				t.Fatalf("body\n got %s\nwant %s", bson.Raw(req.Body), bson.Raw(tc.body))
			}
		})
	}
}

// mustDecompress returns the original frame an OP_COMPRESSED message carries.
func mustDecompress(t *testing.T, m *Message) []byte {
	t.Helper()
	b, err := m.Compressed.appendOriginal(nil, m.Header)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBSONObjectTooLargeMessage checks MongoDB's wording for an oversized body.
func TestBSONObjectTooLargeMessage(t *testing.T) {
	body := d("insert", "coll", "$db", "test")
	err := checkDocSize(MaxBSONInternalSize+1, body[4:])
	want := `BSONObj size: 16793601 (0x1004001) is invalid. Size must be between 0 and 16793600(16MB) First element: insert: "coll"`
	if err == nil || err.Message != want || err.Code != mongoerr.BSONObjectTooLarge {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if err := checkDocSize(MaxBSONInternalSize, body[4:]); err != nil {
		t.Fatalf("the limit itself must pass: %v", err)
	}
}

// TestAppendOpMsgChecksum checks the checksum covers the header and sections.
func TestAppendOpMsgChecksum(t *testing.T) {
	frame := AppendOpMsg(nil, 1, 0, ChecksumPresent, ping)
	if int(le.Uint32(frame)) != len(frame) {
		t.Fatalf("length %d, frame %d", le.Uint32(frame), len(frame))
	}
	if got, want := le.Uint32(frame[len(frame)-4:]), checksum(frame[:len(frame)-4]); got != want {
		t.Fatalf("checksum %08x, want %08x", got, want)
	}
}

// TestSequenceCount checks Count against the sequences of the table.
func TestSequenceCount(t *testing.T) {
	var m Message
	if err := m.Decode(rawMsg(1, 0, sec0(insertBody), sec1("documents", doc1, doc2, doc1)), MaxMessageSize); err != nil {
		t.Fatal(err)
	}
	if n := m.Msg.Sequences[0].Count(); n != 3 {
		t.Fatalf("Count = %d, want 3", n)
	}
}

// FuzzReadMessage checks that decoding never panics or over-allocates, and that whatever
// decodes re-encodes to the same bytes (docs/testing.md, Fuzzing).
func FuzzReadMessage(f *testing.F) {
	for _, tc := range messageCases {
		f.Add(tc.raw)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		msg, err := ReadMessage(bufio.NewReader(bytes.NewReader(raw)), MaxMessageSize)
		if err != nil {
			return // rejecting input is fine
		}
		if !bytes.HasPrefix(raw, msg.AppendTo(nil)) {
			t.Fatal("re-encoding changed the message")
		}
		if msg.Header.OpCode == OpCodeCompressed {
			if inner, err := msg.Decompress(); err == nil {
				if int(inner.Header.MessageLength) != HeaderSize+int(msg.Compressed.UncompressedSize) {
					t.Fatal("decompressed size differs from uncompressedSize")
				}
			}
		}
	})
}

// FuzzDecodeSections fuzzes the sections of an OP_MSG (what follows the flags): no panic;
// what decodes re-encodes identically, and its merged command is valid BSON holding every
// sequence as an array of as many documents.
func FuzzDecodeSections(f *testing.F) {
	for _, tc := range messageCases {
		if len(tc.raw) >= HeaderSize+4 && le.Uint32(tc.raw[12:]) == uint32(OpCodeMsg) {
			f.Add(uint32(le.Uint32(tc.raw[HeaderSize:])), tc.raw[HeaderSize+4:])
		}
	}
	f.Fuzz(func(t *testing.T, flags uint32, sections []byte) {
		frame := rawMsg(1, MsgFlags(flags), sections)
		var m Message
		if err := m.Decode(frame, MaxMessageSize); err != nil {
			return
		}
		if !bytes.Equal(m.AppendTo(nil), frame) {
			t.Fatal("re-encoding changed the message")
		}
		cmd := bsoncore.Document(m.Msg.AppendCommand(nil))
		if err := cmd.Validate(); err != nil {
			t.Fatalf("merged command is invalid: %v", err)
		}
		for _, s := range m.Msg.Sequences {
			v, err := cmd.LookupErr(s.Identifier)
			if s.Identifier == "" || bytes.ContainsRune([]byte(s.Identifier), '.') {
				continue // LookupErr cannot name these; the BSON check above covers them
			}
			if err != nil {
				t.Fatalf("sequence %q missing from the command: %v", s.Identifier, err)
			}
			vals, err := v.Array().Values()
			if err != nil || len(vals) != s.Count() {
				t.Fatalf("sequence %q has %d documents, the array %d (%v)", s.Identifier, s.Count(), len(vals), err)
			}
		}
	})
}
