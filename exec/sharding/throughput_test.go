package sharding

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/store"
)

// TestThroughputShares: a collection's own throughput wins; the others split their
// database's shared throughput evenly, or by the shares the manager moved by demand (scaled
// to the database's throughput), system.* collections and views taking no share; autoscale
// follows whichever offer applies.
func TestThroughputShares(t *testing.T) {
	cat := fixture.Stores(t, 1)
	st := cat.Store()
	dbOpts := func(ru int64, autoscale bool) bsoncore.Document {
		b := bsoncore.NewDocumentBuilder().AppendInt64("throughput", ru)
		if autoscale {
			b.AppendBoolean("autoscale", true)
		}
		return b.Build()
	}
	if err := st.CreateDatabase("shared", dbOpts(1200, false)); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateDatabase("auto", dbOpts(4000, true)); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateDatabase("demand", dbOpts(1200, false)); err != nil {
		t.Fatal(err)
	}
	view := bsoncore.NewDocumentBuilder().AppendString("viewOn", "a").Build()
	for _, c := range []store.Collection{
		{DB: "shared", Name: "a"}, {DB: "shared", Name: "b"}, {DB: "shared", Name: "c"},
		{DB: "shared", Name: "own", Throughput: 700},
		{DB: "shared", Name: "ownAuto", Throughput: 9000, Autoscale: true},
		{DB: "shared", Name: "system.profile"}, {DB: "shared", Name: "v", Options: view},
		{DB: "auto", Name: "x"}, {DB: "auto", Name: "y"},
		{DB: "none", Name: "z"}, {DB: "none", Name: "system.js"},
		{DB: "demand", Name: "hot", SharedRU: 900}, {DB: "demand", Name: "cold", SharedRU: 300}, {DB: "demand", Name: "new"},
	} {
		fixture.Create(t, cat, c)
	}
	state := st.State()
	for _, tc := range []struct {
		db, coll string
		want     Provisioned
	}{
		{"shared", "a", Provisioned{RU: 400}},
		{"shared", "c", Provisioned{RU: 400}},
		{"shared", "own", Provisioned{RU: 700}},
		{"shared", "ownAuto", Provisioned{RU: 9000, Autoscale: true}},
		{"shared", "system.profile", Provisioned{}},
		{"shared", "v", Provisioned{}},
		{"auto", "x", Provisioned{RU: 2000, Autoscale: true}},
		{"none", "z", Provisioned{}},
		// Shares moved by demand weigh SharedRU, a collection without one the even 400; scaled to 1,200.
		{"demand", "hot", Provisioned{RU: 675}},
		{"demand", "cold", Provisioned{RU: 225}},
		{"demand", "new", Provisioned{RU: 300}},
	} {
		c := state.Collection(tc.db, tc.coll)
		if c == nil {
			t.Fatalf("%s.%s missing", tc.db, tc.coll)
		}
		if got := Throughput(state, c); got != tc.want {
			t.Errorf("Throughput(%s.%s) = %+v, want %+v", tc.db, tc.coll, got, tc.want)
		}
	}
}
