package catalog_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// TestValidateCollName checks MongoDB's rules for collection names, each refusal with
// InvalidNamespace 73 and MongoDB's message.
func TestValidateCollName(t *testing.T) {
	long := strings.Repeat("x", 255-len("db."))
	for _, tc := range []struct {
		name, coll string
		msg        string // "" when valid
	}{
		{"Plain", "c", ""},
		{"Dotted", "a.b", ""},
		{"SystemLike", "systems", ""},
		{"Longest", long, ""},
		{"Empty", "", "Invalid namespace specified 'db.'"},
		{"TooLong", long + "y", "Fully qualified namespace is too long. Namespace: db." + long + "y Max: 255"},
		{"Dollar", "a$b", "Invalid collection name: a$b"},
		{"NulByte", "a\x00b", "Invalid collection name: a\x00b"},
		{"LeadingDot", ".a", "Invalid collection name: .a"},
		{"System", "system.foo", "Invalid system namespace: db.system.foo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := catalog.ValidateCollName("db", tc.coll)
			if tc.msg == "" {
				wantCode(t, err, 0, "", "")
				return
			}
			wantCode(t, err, mongoerr.InvalidNamespace, "InvalidNamespace", tc.msg)
		})
	}
}

// TestKeyPatternFields checks how a key pattern becomes index fields: negative numbers
// descend, "hashed" hashes, any other string is refused.
func TestKeyPatternFields(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		want      []bsonx.IndexField
		msg       string
	}{
		{"Ascending", `{"a": 1}`, []bsonx.IndexField{{Path: "a"}}, ""},
		{"Compound", `{"a": 1, "b.c": -1}`, []bsonx.IndexField{{Path: "a"}, {Path: "b.c", Desc: true}}, ""},
		{"NegativeDouble", `{"a": -0.5}`, []bsonx.IndexField{{Path: "a", Desc: true}}, ""},
		{"NegativeLong", `{"a": {"$numberLong": "-1"}}`, []bsonx.IndexField{{Path: "a", Desc: true}}, ""},
		{"Hashed", `{"a": 1, "h": "hashed"}`, []bsonx.IndexField{{Path: "a"}, {Path: "h", Hashed: true}}, ""},
		{"UnknownPlugin", `{"a": "text"}`, nil, "Unknown index plugin 'text'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := catalog.KeyPatternFields(ext(t, tc.key))
			if tc.msg != "" {
				wantCode(t, err, mongoerr.CannotCreateIndex, "CannotCreateIndex", tc.msg)
				return
			}
			wantCode(t, err, 0, "", "")
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("fields %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChangeAndStoreErrors checks the mapping of the store's sentinels to MongoDB's
// errors: exists, not found, closed, and errors passed through.
func TestChangeAndStoreErrors(t *testing.T) {
	other := errors.New("other")
	me := mongoerr.New(mongoerr.BadValue, "mine")
	for _, tc := range []struct {
		name      string
		err, got  error
		code      mongoerr.Code
		codeName  string
		msg       string
		unchanged bool // the error is returned as it is
	}{
		{"Nil", nil, catalog.ChangeError(nil, "db", "c"), 0, "", "", true},
		{"Exists", store.ErrExists, catalog.ChangeError(fmt.Errorf("x: %w", store.ErrExists), "db", "c"),
			mongoerr.NamespaceExists, "NamespaceExists", "Collection db.c already exists.", false},
		{"NotFound", store.ErrNotFound, catalog.ChangeError(store.ErrNotFound, "db", "c"),
			mongoerr.NamespaceNotFound, "NamespaceNotFound", "ns not found db.c", false},
		{"Closed", store.ErrClosed, catalog.StoreError(store.ErrClosed),
			mongoerr.ShutdownInProgress, "ShutdownInProgress", "The server is in quiesce mode and will shut down", false},
		{"ClosedViaChange", store.ErrClosed, catalog.ChangeError(store.ErrClosed, "db", "c"),
			mongoerr.ShutdownInProgress, "ShutdownInProgress", "The server is in quiesce mode and will shut down", false},
		{"OtherPassesThrough", other, catalog.StoreError(other), 0, "", "", true},
		{"MongoPassesThrough", me, catalog.StoreError(me), 0, "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.unchanged {
				if tc.got != tc.err { //nolint:errorlint // identity: the error must come back unchanged, not wrapped
					t.Fatalf("got %v, want %v unchanged", tc.got, tc.err)
				}
				return
			}
			wantCode(t, tc.got, tc.code, tc.codeName, tc.msg)
			if !errors.Is(tc.got, tc.err) {
				t.Errorf("%v lost its cause %v", tc.got, tc.err)
			}
		})
	}
}

// TestForWrite checks that a first write creates a valid collection once, refuses an
// invalid name without creating anything, and that Lookup and Refresh follow the catalog.
func TestForWrite(t *testing.T) {
	cat := fixture.Stores(t, 1)
	if ci, err := cat.Lookup("db", "c"); ci != nil || err != nil {
		t.Fatalf("Lookup of an absent collection: %v, %v", ci, err)
	}
	ci, err := cat.ForWrite("db", "c")
	if err != nil || ci == nil || ci.NS() != "db.c" {
		t.Fatalf("ForWrite: %v, %v", ci, err)
	}
	if len(ci.Indexes) != 1 || !ci.Indexes[0].IsID || !ci.Indexes[0].Unique || ci.Hashed != -1 || ci.ShardKey != nil {
		t.Errorf("a new collection: indexes %d, shard key %v, hashed %d", len(ci.Indexes), ci.ShardKey, ci.Hashed)
	}
	again, err := cat.ForWrite("db", "c")
	if err != nil || again.Meta.ID != ci.Meta.ID {
		t.Errorf("a second ForWrite made another collection: %v, %v", again, err)
	}
	_, err = cat.ForWrite("db", "system.x")
	wantCode(t, err, mongoerr.InvalidNamespace, "InvalidNamespace", "Invalid system namespace: db.system.x")
	if x, _ := cat.Lookup("db", "system.x"); x != nil {
		t.Error("a refused name was created")
	}
	if cat.Refresh(ci) != ci {
		t.Error("Refresh of a current collection compiled it again")
	}
	m, err := cat.Store().UpdateCollection("db", "c", func(c *store.Collection) error {
		x := fixture.Index(t, "a_1", `{"a": 1}`)
		x.ID, c.NextIndexID = c.NextIndexID, c.NextIndexID+1
		c.Indexes = append(c.Indexes, x)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fresh := cat.Refresh(ci)
	if fresh.Meta != m || len(fresh.Indexes) != 2 || fresh.Indexes[1].Meta.Name != "a_1" {
		t.Errorf("Refresh after an index was added: %d indexes", len(fresh.Indexes))
	}
	if err := cat.MarkMultikey(ci.Meta.ID, fresh.Indexes[1].Meta.ID, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	if mk := cat.Refresh(fresh); !mk.Indexes[1].IsMultikey(0) || mk.Indexes[1].OneEntryPerDoc() {
		t.Error("MarkMultikey did not reach the compiled index")
	}
}

// TestSpecBool checks the boolean options of an index spec: booleans, numbers, absent.
func TestSpecBool(t *testing.T) {
	spec := ext(t, `{"t": true, "f": false, "one": 1, "zero": 0.0, "s": "x"}`)
	for key, want := range map[string]bool{"t": true, "f": false, "one": true, "zero": false, "s": false, "absent": false} {
		if got := catalog.SpecBool(spec, key); got != want {
			t.Errorf("SpecBool(%s) = %v, want %v", key, got, want)
		}
	}
	if catalog.SpecBool(nil, "t") {
		t.Error("SpecBool of a nil spec is true")
	}
}
