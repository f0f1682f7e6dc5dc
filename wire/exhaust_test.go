package wire

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestExhaustStream: a handler that sets Request.Exhaust on a request allowing exhaust
// streams: every reply but the last sets moreToCome, each answers the one before it
// (responseTo), and the handler sees how many went before. Without exhaustAllowed the same
// command gets one reply; afterwards the connection serves requests as usual.
func TestExhaustStream(t *testing.T) {
	ts := startServer(t, ServerOptions{}, newEchoHandler())
	c := dial(t, ts)
	stream := bsoncore.NewDocumentBuilder().AppendInt32("stream", 2).AppendString("$db", "admin").Build()
	if _, err := c.Write(AppendOpMsg(nil, 7, 0, ExhaustAllowed, stream)); err != nil {
		t.Fatal(err)
	}
	responseTo := int32(7)
	for i := range 3 {
		m, err := c.read()
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		more := m.Msg.Flags&MoreToCome != 0
		if got := m.Msg.Body.Lookup("replies").Int32(); got != int32(i) || more != (i < 2) || m.Header.ResponseTo != responseTo {
			t.Fatalf("reply %d: replies %d, moreToCome %v, responseTo %d; want %d, %v, %d",
				i, got, more, m.Header.ResponseTo, i, i < 2, responseTo)
		}
		responseTo = m.Header.RequestID
	}
	m := c.roundTrip(t, AppendOpMsg(nil, 8, 0, 0, stream))
	if m.Msg.Flags&MoreToCome != 0 || m.Header.ResponseTo != 8 || m.Msg.Body.Lookup("replies").Int32() != 0 {
		t.Fatalf("without exhaustAllowed: flags %v, responseTo %d, %s", m.Msg.Flags, m.Header.ResponseTo, m.Msg.Body)
	}
	c.ping(t, 9)
}
