package changes

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The change log of another node's shard is read with _cleaveShardChanges, answered by
// exec/command/node with AppendChanges.

// RemoteLog returns the log of shard, on another node, read through p.
func RemoteLog(p catalog.Peers, shard int) Log { return remoteLog{p, shard} }

// remoteLog is RemoteLog's.
type remoteLog struct {
	p     catalog.Peers
	shard int
}

// Read implements Log.
func (l remoteLog) Read(ctx context.Context, after store.ChangePos, limit int) (Batch, error) {
	cmd := bsoncore.NewDocumentBuilder().AppendInt32("_cleaveShardChanges", int32(l.shard)).
		AppendInt64("ts", int64(after.TS)).AppendInt64("pos", int64(after.Pos)).
		AppendInt32("limit", int32(limit)).AppendString("$db", "admin").Build()
	reply, err := l.p.Command(ctx, l.shard, cmd)
	if err != nil {
		return Batch{}, err
	}
	return DecodeChanges(reply)
}

// AppendChanges appends a read of a change log to an internal reply.
func AppendChanges(dst []byte, b Batch) []byte {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "records")
	for i, x := range b.Records {
		idx, out := bsoncore.AppendDocumentElementStart(dst, strconv.Itoa(i))
		out = bsoncore.AppendInt64Element(out, "ts", int64(x.Pos.TS))
		out = bsoncore.AppendInt64Element(out, "pos", int64(x.Pos.Pos))
		out = bsoncore.AppendDocumentElement(out, "rec", x.Rec)
		dst, _ = bsoncore.AppendDocumentEnd(out, idx)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	dst = bsoncore.AppendInt64Element(dst, "frontier", int64(b.Frontier))
	return bsoncore.AppendInt64Element(dst, "trimmed", int64(b.Trimmed))
}

// DecodeChanges reads what AppendChanges wrote.
func DecodeChanges(reply bsoncore.Document) (Batch, error) {
	bad := mongoerr.New(mongoerr.InternalError, "malformed _cleaveShardChanges reply")
	var b Batch
	f, ok1 := reply.Lookup("frontier").Int64OK()
	t, ok2 := reply.Lookup("trimmed").Int64OK()
	arr, ok3 := reply.Lookup("records").ArrayOK()
	if !ok1 || !ok2 || !ok3 {
		return b, bad
	}
	b.Frontier, b.Trimmed = uint64(f), uint64(t)
	vals, _ := arr.Values()
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return b, bad
		}
		ts, ok1 := d.Lookup("ts").Int64OK()
		pos, ok2 := d.Lookup("pos").Int64OK()
		rec, ok3 := d.Lookup("rec").DocumentOK()
		if !ok1 || !ok2 || !ok3 {
			return b, bad
		}
		b.Records = append(b.Records, Record{Pos: store.ChangePos{TS: uint64(ts), Pos: uint32(pos)}, Rec: rec})
	}
	return b, nil
}
