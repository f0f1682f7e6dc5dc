package command_test

import (
	"testing"
	"unsafe"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
)

// genericNames are the fields Request.Generic finds, by their constant.
var genericNames = []struct {
	f    int
	name string
}{
	{command.GenDB, "$db"}, {command.GenLSID, "lsid"}, {command.GenClusterTime, "$clusterTime"},
	{command.GenReadConcern, "readConcern"}, {command.GenTxnNumber, "txnNumber"},
	{command.GenAutocommit, "autocommit"}, {command.GenStartTxn, "startTransaction"},
	{command.GenSingleBatch, "singleBatch"}, {command.GenPriority, "priorityLevel"},
}

// TestRequestGenericFirstOccurrence checks that each generic field is found with its value,
// the first of repeated ones, and that a field nested in another is not one.
func TestRequestGenericFirstOccurrence(t *testing.T) {
	body := streamtest.ExtDoc(t, `{"find": "c",
		"filter": {"$db": "nested", "txnNumber": 99},
		"$db": "first", "lsid": {"id": 1}, "$clusterTime": {"clusterTime": {"$timestamp": {"t": 5, "i": 1}}},
		"readConcern": {"level": "local"}, "txnNumber": {"$numberLong": "7"}, "autocommit": false,
		"startTransaction": true, "singleBatch": true, "priorityLevel": "low",
		"$db": "second", "priorityLevel": "high", "txnNumber": {"$numberLong": "8"}, "autocommit": true, "singleBatch": false}`)
	r := &command.Request{Body: body}
	want := map[string]func(v bsoncore.Value) bool{
		"$db":              func(v bsoncore.Value) bool { return v.StringValue() == "first" },
		"lsid":             func(v bsoncore.Value) bool { return v.Document().Lookup("id").Int32() == 1 },
		"$clusterTime":     func(v bsoncore.Value) bool { t, _ := v.Document().Lookup("clusterTime").Timestamp(); return t == 5 },
		"readConcern":      func(v bsoncore.Value) bool { return v.Document().Lookup("level").StringValue() == "local" },
		"txnNumber":        func(v bsoncore.Value) bool { return v.Int64() == 7 },
		"autocommit":       func(v bsoncore.Value) bool { return !v.Boolean() },
		"startTransaction": func(v bsoncore.Value) bool { return v.Boolean() },
		"singleBatch":      func(v bsoncore.Value) bool { return v.Boolean() },
		"priorityLevel":    func(v bsoncore.Value) bool { return v.StringValue() == "low" },
	}
	for _, g := range genericNames {
		v := r.Generic(g.f)
		if v.Type == 0 || !want[g.name](v) {
			t.Errorf("Generic(%s) = %v", g.name, v)
		}
	}
}

// TestRequestGenericAbsent checks that every field a body lacks is Type 0, in bodies with
// none of them, with other fields only, and empty.
func TestRequestGenericAbsent(t *testing.T) {
	for _, tc := range []struct {
		name string
		body bsoncore.Document
	}{
		{"Ping", streamtest.ExtDoc(t, `{"ping": 1}`)},
		{"LookAlikes", streamtest.ExtDoc(t, `{"find": "c", "db": "x", "lsid2": 1, "txnnumber": 1, "readconcern": {}, "$DB": "x"}`)},
		{"Nested", streamtest.ExtDoc(t, `{"find": "c", "options": {"$db": "x", "lsid": {}, "autocommit": false}}`)},
		{"Empty", streamtest.ExtDoc(t, `{}`)},
		{"Nil", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &command.Request{Body: tc.body}
			for _, g := range genericNames {
				if v := r.Generic(g.f); v.Type != 0 {
					t.Errorf("Generic(%s) = %v, want absent", g.name, v)
				}
			}
		})
	}
}

// TestRequestHasAPIParams checks that each Stable API field counts, at the top level only.
func TestRequestHasAPIParams(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       bool
	}{
		{"APIVersion", `{"ping": 1, "apiVersion": "1"}`, true},
		{"APIStrict", `{"ping": 1, "apiStrict": false}`, true},
		{"APIDeprecationErrors", `{"ping": 1, "apiDeprecationErrors": true}`, true},
		{"AfterGenerics", `{"ping": 1, "$db": "a", "lsid": {}, "apiVersion": "1"}`, true},
		{"None", `{"ping": 1, "$db": "a"}`, false},
		{"NestedOnly", `{"find": "c", "filter": {"apiVersion": "1"}}`, false},
		{"OtherSpelling", `{"ping": 1, "apiversion": "1"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &command.Request{Body: streamtest.ExtDoc(t, tc.body)}
			if got := r.HasAPIParams(); got != tc.want {
				t.Fatalf("HasAPIParams() = %v, want %v", got, tc.want)
			}
			if got := r.HasAPIParams(); got != tc.want { // once scanned, the same answer
				t.Fatalf("second HasAPIParams() = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNameCacheDbName checks that a connection's name cache hands out the same string for
// the same $db, request after request, without allocating, a new one when $db changes, and
// refuses what is not a valid string.
func TestNameCacheDbName(t *testing.T) {
	var c command.Conn
	dbOf := func(s string) bsoncore.Value { return streamtest.ExtDoc(t, `{"$db": "`+s+`"}`).Lookup("$db") }
	a1, a2, b := dbOf("shop"), dbOf("shop"), dbOf("other")
	first, ok := c.Names.DbName(a1)
	if !ok || first != "shop" {
		t.Fatalf("DbName = %q, %v", first, ok)
	}
	again, _ := c.Names.DbName(a2) // another body, the same name
	if unsafe.StringData(again) != unsafe.StringData(first) {
		t.Error("the same $db gave a new string")
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = c.Names.DbName(a2) }); n != 0 {
		t.Errorf("DbName of the cached name allocates %v times", n)
	}
	other, _ := c.Names.DbName(b)
	if other != "other" || unsafe.StringData(other) == unsafe.StringData(first) {
		t.Errorf("a new $db gave %q", other)
	}
	if back, _ := c.Names.DbName(a1); back != "shop" {
		t.Errorf("back to the first $db: %q", back)
	}
	for _, tc := range []struct {
		name string
		v    bsoncore.Value
	}{
		{"NotAString", bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}},
		{"Truncated", bsoncore.Value{Type: bsoncore.TypeString, Data: []byte{1, 0}}},
		{"LengthPastData", bsoncore.Value{Type: bsoncore.TypeString, Data: []byte{9, 0, 0, 0, 'a', 0}}},
		{"ZeroLength", bsoncore.Value{Type: bsoncore.TypeString, Data: []byte{0, 0, 0, 0, 0}}},
		{"NegativeLength", bsoncore.Value{Type: bsoncore.TypeString, Data: []byte{0xff, 0xff, 0xff, 0xff, 0}}},
	} {
		if s, ok := c.Names.DbName(tc.v); ok || s != "" {
			t.Errorf("%s: DbName = %q, %v; want refused", tc.name, s, ok)
		}
	}
}

// TestNameCacheNamespace checks that Namespace joins db and collection, handing out the same
// string while they stay the same (without allocating) and a new one when either changes.
func TestNameCacheNamespace(t *testing.T) {
	var c command.Conn
	first := c.Names.Namespace("shop", "orders")
	if first != "shop.orders" {
		t.Fatalf("Namespace = %q", first)
	}
	db, coll := string([]byte("shop")), string([]byte("orders")) // equal, not the same memory
	if again := c.Names.Namespace(db, coll); unsafe.StringData(again) != unsafe.StringData(first) {
		t.Error("the same namespace gave a new string")
	}
	if n := testing.AllocsPerRun(100, func() { c.Names.Namespace(db, coll) }); n != 0 {
		t.Errorf("Namespace of the cached namespace allocates %v times", n)
	}
	for _, tc := range []struct{ db, coll, want string }{
		{"shop", "orderx", "shop.orderx"}, // another collection, the same length
		{"shoq", "orderx", "shoq.orderx"}, // another database, the same length
		{"shoq.", "rderx", "shoq..rderx"}, // the dot moved
		{"sho", "q.rderx", "sho.q.rderx"},
		{"shop", "order", "shop.order"}, // shorter
		{"shop", "orders", "shop.orders"},
	} {
		if got := c.Names.Namespace(tc.db, tc.coll); got != tc.want {
			t.Errorf("Namespace(%q, %q) = %q, want %q", tc.db, tc.coll, got, tc.want)
		}
	}
}
