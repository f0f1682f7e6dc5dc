package route

import (
	"context"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ReadChanges reads the change log of shard s on the node that owns it
// (_cleaveShardChanges): changes.Remote for the change streams of this node.
func (rs *Nodes) ReadChanges(ctx context.Context, s int, after store.ChangePos, limit int) (changes.Batch, error) {
	cmd := bsoncore.NewDocumentBuilder().AppendInt32("_cleaveShardChanges", int32(s)).
		AppendInt64("ts", int64(after.TS)).AppendInt64("pos", int64(after.Pos)).
		AppendInt32("limit", int32(limit)).AppendString("$db", "admin").Build()
	reply, err := rs.Command(ctx, s, cmd)
	if err != nil {
		return changes.Batch{}, err
	}
	return DecodeChanges(reply)
}

// AppendChanges appends a read of a change log to an internal reply.
func AppendChanges(dst []byte, b changes.Batch) []byte {
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
func DecodeChanges(reply bsoncore.Document) (changes.Batch, error) {
	bad := mongoerr.New(mongoerr.InternalError, "malformed _cleaveShardChanges reply")
	var b changes.Batch
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
		b.Records = append(b.Records, changes.Record{Pos: store.ChangePos{TS: uint64(ts), Pos: uint32(pos)}, Rec: rec})
	}
	return b, nil
}
