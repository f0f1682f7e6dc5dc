package query

import (
	"bytes"
	"math"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestPointGetRoundTrip checks the compact point read's encoding: every field survives
// AppendPointGet then ParsePointGet (a hash past int64's range included, the filter only
// when there is one), a field the owner does not read is ignored, and a request with a
// missing or mistyped field is refused with BadValue.
func TestPointGetRoundTrip(t *testing.T) {
	filter := streamtest.ExtDoc(t, `{"sk": "a", "_id": 5}`)
	for _, tc := range []struct {
		name string
		g    PointGet
	}{
		{"StringID", PointGet{CompactHead: catalog.CompactHead{DB: "db", Coll: "c", CollID: 7, Rev: 42, Shard: 1}, Hash: 12345, ID: bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "user1")}}},
		{"HighHash", PointGet{CompactHead: catalog.CompactHead{DB: "mbench", Coll: "telemetry", CollID: 1 << 40, Rev: math.MaxInt64, Shard: 0}, Hash: math.MaxUint64, ID: bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, -1)}}},
		{"WithFilter", PointGet{CompactHead: catalog.CompactHead{DB: "d", Coll: "x.y", CollID: 3, Rev: 1, Shard: 5}, Hash: 1 << 63, ID: bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 5)}, Filter: filter}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := bsoncore.Document(AppendPointGet(nil, &tc.g))
			if err := cmd.Validate(); err != nil {
				t.Fatalf("invalid BSON: %v", err)
			}
			if first, _ := cmd.IndexErr(0); first.Key() != PointGetCommand {
				t.Fatalf("first field %q, want the command's name", first.Key())
			}
			got, err := ParsePointGet(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if got.DB != tc.g.DB || got.Coll != tc.g.Coll || got.CollID != tc.g.CollID || got.Rev != tc.g.Rev ||
				got.Shard != tc.g.Shard || got.Hash != tc.g.Hash || !got.ID.Equal(tc.g.ID) || !bytes.Equal(got.Filter, tc.g.Filter) {
				t.Errorf("round trip of %+v: %+v", tc.g, got)
			}
			// The priority a router adds (route.withPriority) rides along unread.
			withPrio := bsoncore.NewDocumentBuilder()
			elems, _ := cmd.Elements()
			for _, e := range elems {
				withPrio.AppendValue(e.Key(), e.Value())
			}
			withPrio.AppendString("priorityLevel", "low")
			if again, err := ParsePointGet(withPrio.Build()); err != nil || again.Hash != tc.g.Hash {
				t.Errorf("with a priority: %+v, %v", again, err)
			}
		})
	}
	for _, tc := range []struct{ name, doc string }{
		{"NoHash", `{"_cleaveShardGet": "c", "collId": {"$numberLong": "1"}, "rev": {"$numberLong": "1"}, "shard": 0, "id": 1, "$db": "d"}`},
		{"NoID", `{"_cleaveShardGet": "c", "collId": {"$numberLong": "1"}, "rev": {"$numberLong": "1"}, "shard": 0, "hash": {"$numberLong": "1"}, "$db": "d"}`},
		{"NoDB", `{"_cleaveShardGet": "c", "collId": {"$numberLong": "1"}, "rev": {"$numberLong": "1"}, "shard": 0, "hash": {"$numberLong": "1"}, "id": 1}`},
		{"Int32Hash", `{"_cleaveShardGet": "c", "collId": {"$numberLong": "1"}, "rev": {"$numberLong": "1"}, "shard": 0, "hash": 1, "id": 1, "$db": "d"}`},
		{"StringShard", `{"_cleaveShardGet": "c", "collId": {"$numberLong": "1"}, "rev": {"$numberLong": "1"}, "shard": "0", "hash": {"$numberLong": "1"}, "id": 1, "$db": "d"}`},
		{"FilterNotDoc", `{"_cleaveShardGet": "c", "collId": {"$numberLong": "1"}, "rev": {"$numberLong": "1"}, "shard": 0, "hash": {"$numberLong": "1"}, "id": 1, "filter": 1, "$db": "d"}`},
	} {
		_, err := ParsePointGet(streamtest.ExtDoc(t, tc.doc))
		if me := mongoerr.As(err); me == nil || me.Code != mongoerr.BadValue {
			t.Errorf("%s: %v, want BadValue", tc.name, err)
		}
	}
}

// TestPointIDOnly checks which filters a compact point read sends no filter for: exactly
// {_id: <value>} with a value whose equality is its key's; anything else travels.
func TestPointIDOnly(t *testing.T) {
	for _, tc := range []struct {
		name, filter, id string
		want             bool
	}{
		{"String", `{"_id": "user1"}`, `{"v": "user1"}`, true},
		{"Int64", `{"_id": {"$numberLong": "7"}}`, `{"v": {"$numberLong": "7"}}`, true},
		{"ObjectID", `{"_id": {"$oid": "5f1d7a3e9b1e8b3a2c4d5e6f"}}`, `{"v": {"$oid": "5f1d7a3e9b1e8b3a2c4d5e6f"}}`, true},
		{"Eq", `{"_id": {"$eq": "user1"}}`, `{"v": "user1"}`, false},
		{"MoreFields", `{"_id": "user1", "a": 1}`, `{"v": "user1"}`, false},
		{"ShardKeyFirst", `{"sk": "a", "_id": "user1"}`, `{"v": "user1"}`, false},
		{"Document", `{"_id": {"a": 1}}`, `{"v": {"a": 1}}`, false},
		{"Decimal", `{"_id": {"$numberDecimal": "1"}}`, `{"v": {"$numberDecimal": "1"}}`, false},
		{"Null", `{"_id": null}`, `{"v": null}`, false},
		{"OtherValue", `{"_id": "user1"}`, `{"v": "user2"}`, false},
		{"OtherType", `{"_id": 1}`, `{"v": 1.0}`, false},
	} {
		f := streamtest.ExtDoc(t, tc.filter)
		id := streamtest.ExtDoc(t, tc.id).Lookup("v")
		if got := idOnly(f, id); got != tc.want {
			t.Errorf("%s: idOnly(%s, %s) = %v, want %v", tc.name, f, id, got, tc.want)
		}
	}
}
