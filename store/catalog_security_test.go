package store

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

func TestCatalogSecurityRecordsSurviveReopen(t *testing.T) {
	mem := vfs.NewMem()
	db := openOn(t, mem, "db")
	cat := openCatalog(t, db)
	before := cat.State()
	puts := []SecurityRecord{
		{Kind: 'u', DB: "admin", Name: "root", Doc: bdoc("v", 1)},
		{Kind: 'u', DB: "app", Name: "alice", Doc: bdoc("v", 2)},
		{Kind: 'r', DB: "app", Name: "reader", Doc: bdoc("v", 3)},
	}
	if err := cat.UpdateSecurity(nil, puts, nil); err != nil {
		t.Fatal(err)
	}
	if len(before.SecurityRecords('u', "")) != 0 {
		t.Fatal("an older snapshot sees a later change")
	}
	errNo := errors.New("no")
	if err := cat.UpdateSecurity(func(*CatalogState) error { return errNo }, nil, puts[:1]); !errors.Is(err, errNo) {
		t.Fatalf("condition error: %v", err)
	}
	if err := cat.UpdateSecurity(nil, nil, []SecurityRecord{{Kind: 'u', DB: "app", Name: "alice"}}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openOn(t, mem, "db")
	cat = openCatalog(t, db)
	s := cat.State()
	if got := s.SecurityRecords('u', ""); len(got) != 1 || got[0].Name != "root" || !reflect.DeepEqual(got[0].Doc, bdoc("v", 1)) {
		t.Fatalf("users after reopen: %+v", got)
	}
	if got := s.SecurityRecord('r', "app", "reader"); !reflect.DeepEqual(got, bdoc("v", 3)) {
		t.Fatalf("role after reopen: %v", got)
	}
	if got := s.SecurityRecords('r', "admin"); len(got) != 0 {
		t.Fatalf("roles of admin: %+v", got)
	}
}
