package archive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// doc builds {_id: id}.
func doc(id int32) []byte {
	return bsoncore.NewDocumentBuilder().AppendInt32("_id", id).Build()
}

// readAll reads every item of an archive.
func readAll(t *testing.T, b []byte) (*Reader, []Item) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var items []Item
	for {
		it, err := r.Next()
		if errors.Is(err, io.EOF) {
			return r, items
		}
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, it)
	}
}

// TestArchiveRoundTripInterleaved writes two namespaces in interleaved segments and reads
// them back in order, with their CRCs checked.
func TestArchiveRoundTripInterleaved(t *testing.T) {
	var buf bytes.Buffer
	colls := []CollectionMetadata{{DB: "d", Collection: "a", Metadata: `{"indexes":[]}`}, {DB: "d", Collection: "b"}, {DB: "d", Collection: "v", Type: "view"}}
	w, err := NewWriter(&buf, Header{ConcurrentCollections: 2, ServerVersion: "8.0.0", ToolVersion: "cleave"}, colls)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.Segment("d", "a", [][]byte{doc(1), doc(2)}))
	must(w.Segment("d", "b", [][]byte{doc(10)}))
	must(w.Segment("d", "a", [][]byte{doc(3)}))
	must(w.EOF("d", "a"))
	must(w.EOF("d", "b"))
	r, items := readAll(t, buf.Bytes())
	if h := r.Header(); h.Version != FormatVersion || h.ConcurrentCollections != 2 || h.ServerVersion != "8.0.0" {
		t.Errorf("header %+v", h)
	}
	if got := r.Collections(); len(got) != 3 || got[0] != colls[0] || got[2].Type != "view" {
		t.Errorf("prelude %+v", got)
	}
	want := []string{"a1", "a2", "b10", "a3", "aEOF", "bEOF"}
	if len(items) != len(want) {
		t.Fatalf("%d items, want %d: %+v", len(items), len(want), items)
	}
	for i, it := range items {
		got := it.Collection
		if it.EOF {
			got += "EOF"
		} else {
			id, _ := bsoncore.Document(it.Doc).Lookup("_id").Int32OK()
			got = fmt.Sprintf("%s%d", got, id)
		}
		if got != want[i] {
			t.Errorf("item %d is %s, want %s", i, got, want[i])
		}
	}
}

// TestArchiveReadHandAssembled reads an archive built byte by byte from the spec, the way
// mongodump lays it out, and refuses it once its CRC is wrong.
func TestArchiveReadHandAssembled(t *testing.T) {
	le := binary.LittleEndian
	d1 := doc(7)
	crc := crc64.Checksum(d1, crc64.MakeTable(crc64.ECMA))
	build := func(crc uint64) []byte {
		b := []byte{0x6d, 0xe2, 0x99, 0x81}
		b = append(b, bsoncore.NewDocumentBuilder().AppendInt32("concurrent_collections", 4).AppendString("version", "0.1").
			AppendString("server_version", "7.0.2").AppendString("tool_version", "100.9.0").Build()...)
		b = append(b, bsoncore.NewDocumentBuilder().AppendString("db", "x").AppendString("collection", "c").
			AppendString("metadata", `{"indexes":[]}`).AppendInt32("size", 14).AppendString("type", "").Build()...)
		b = le.AppendUint32(b, 0xffffffff)
		b = append(b, bsoncore.NewDocumentBuilder().AppendString("db", "x").AppendString("collection", "c").
			AppendBoolean("EOF", false).AppendInt64("CRC", 0).Build()...)
		b = append(b, d1...)
		b = le.AppendUint32(b, 0xffffffff)
		b = append(b, bsoncore.NewDocumentBuilder().AppendString("db", "x").AppendString("collection", "c").
			AppendBoolean("EOF", true).AppendInt64("CRC", int64(crc)).Build()...)
		return le.AppendUint32(b, 0xffffffff)
	}
	r, items := readAll(t, build(crc))
	if r.Header().ToolVersion != "100.9.0" || len(r.Collections()) != 1 || r.Collections()[0].Size != 14 {
		t.Errorf("prelude: %+v %+v", r.Header(), r.Collections())
	}
	if len(items) != 2 || !bytes.Equal(items[0].Doc, d1) || !items[1].EOF {
		t.Errorf("items %+v", items)
	}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{ConcurrentCollections: 4, ServerVersion: "7.0.2", ToolVersion: "100.9.0"},
		[]CollectionMetadata{{DB: "x", Collection: "c", Metadata: `{"indexes":[]}`, Size: 14}})
	_ = w.Segment("x", "c", [][]byte{d1})
	_ = w.EOF("x", "c")
	if !bytes.Equal(buf.Bytes(), build(crc)) {
		t.Errorf("Writer's bytes differ from the spec's:\n%x\n%x", buf.Bytes(), build(crc))
	}
	rr, err := NewReader(bytes.NewReader(build(crc + 1)))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = rr.Next()
	if _, err := rr.Next(); !errors.Is(err, ErrFormat) {
		t.Errorf("a wrong CRC: %v, want ErrFormat", err)
	}
}

// TestArchiveRefusesGarbage checks that streams that are not archives fail with ErrFormat.
func TestArchiveRefusesGarbage(t *testing.T) {
	for name, b := range map[string][]byte{
		"Empty":     nil,
		"BadMagic":  {1, 2, 3, 4, 5, 0, 0, 0, 0},
		"Truncated": {0x6d, 0xe2, 0x99, 0x81, 40, 0, 0, 0},
		"HugeDoc":   {0x6d, 0xe2, 0x99, 0x81, 0, 0, 0, 0x7f},
	} {
		if _, err := NewReader(bytes.NewReader(b)); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", name, err)
		}
	}
}
