package catalog_test

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ext parses a document in Extended JSON.
func ext(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	return streamtest.ExtDoc(t, s)
}

// val parses one value in Extended JSON (`1`, `{"$numberLong": "1"}`, `[1]`…).
func val(t testing.TB, s string) bsoncore.Value {
	t.Helper()
	return ext(t, `{"v": `+s+`}`).Lookup("v")
}

// wantCode fails unless err is MongoDB's error code (codeName name) with message msg; a
// code of 0 wants no error. An empty msg checks the code alone.
func wantCode(t testing.TB, err error, code mongoerr.Code, name, msg string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	me := mongoerr.As(err)
	if me == nil {
		t.Fatalf("error %v, want %s (%d)", err, name, code)
		return
	}
	if me.Code != code || me.Code.String() != name || (msg != "" && me.Message != msg) {
		t.Fatalf("error %s (%d) %q, want %s (%d) %q", me.Code, int32(me.Code), me.Message, name, int32(code), msg)
	}
}
