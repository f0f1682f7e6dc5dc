package integration

import (
	le "encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// opQuery sends one OP_QUERY command on a fresh connection to srv and returns the document
// of its OP_REPLY.
func opQuery(t *testing.T, srv *server, ns string, cmd bson.D) bson.Raw {
	t.Helper()
	body, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	var msg []byte
	msg = le.LittleEndian.AppendUint32(msg, 0) // flags
	msg = append(append(msg, ns...), 0)
	msg = le.LittleEndian.AppendUint32(msg, 0)          // numberToSkip
	msg = le.LittleEndian.AppendUint32(msg, 0xFFFFFFFF) // numberToReturn: -1
	msg = append(msg, body...)
	opcode, rest := rawRoundTrip(t, srv, 2004, msg)
	if opcode != 1 {
		t.Fatalf("reply opcode %d, want OP_REPLY (1)", opcode)
	}
	return bson.Raw(rest[20:]) // responseFlags, cursorID, startingFrom, numberReturned
}

// rawRoundTrip sends one message of opcode with body msg on a fresh connection to srv and
// returns the reply's opcode and the bytes after its header.
func rawRoundTrip(t *testing.T, srv *server, opcode uint32, msg []byte) (uint32, []byte) {
	t.Helper()
	frame := le.LittleEndian.AppendUint32(nil, uint32(16+len(msg)))
	frame = le.LittleEndian.AppendUint32(frame, 7) // requestID
	frame = le.LittleEndian.AppendUint32(frame, 0) // responseTo
	frame = le.LittleEndian.AppendUint32(frame, opcode)
	frame = append(frame, msg...)
	c, err := net.DialTimeout("tcp", srv.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	var hdr [16]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		t.Fatal(err)
	}
	rest := make([]byte, le.LittleEndian.Uint32(hdr[:])-16)
	if _, err := io.ReadFull(c, rest); err != nil {
		t.Fatal(err)
	}
	return le.LittleEndian.Uint32(hdr[12:]), rest
}

// TestOpQueryCommands: as MongoDB 7.0, OP_QUERY runs the handshake (and the few commands old
// drivers send before switching to OP_MSG) and answers every other command with
// UnsupportedOpQueryCommand, running nothing.
func TestOpQueryCommands(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	reply := opQuery(t, srv, "admin.$cmd", bson.D{{Key: "isMaster", Value: 1}})
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 || reply.Lookup("maxWireVersion").Int32() != 21 {
		t.Errorf("isMaster over OP_QUERY: %s", reply)
	}
	reply = opQuery(t, srv, "admin.$cmd", bson.D{{Key: "buildInfo", Value: 1}})
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		t.Errorf("buildInfo over OP_QUERY: %s", reply)
	}
	db := dbName(t)
	reply = opQuery(t, srv, db+".$cmd", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}})
	code, _ := reply.Lookup("code").AsInt64OK()
	msg, _ := reply.Lookup("errmsg").StringValueOK()
	if code != 352 || reply.Lookup("codeName").StringValue() != "UnsupportedOpQueryCommand" ||
		msg != "Unsupported OP_QUERY command: insert. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal" {
		t.Errorf("insert over OP_QUERY: %s", reply)
	}
	if n := countFind(t, srv.client(t).Database(db).Collection("c"), bson.D{}, nil); n != 0 {
		t.Errorf("the refused OP_QUERY insert stored %d documents", n)
	}
}
