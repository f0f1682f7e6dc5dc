package mongoerr

import (
	"errors"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func TestCodeNamesUnique(t *testing.T) {
	seen := map[string]Code{}
	for c, n := range names {
		if prev, ok := seen[n]; ok {
			t.Errorf("codes %d and %d share the name %q", prev, c, n)
		}
		seen[n] = c
	}
}

func TestCodeString(t *testing.T) {
	cases := []struct {
		code Code
		want string
	}{
		{CommandNotFound, "CommandNotFound"},
		{InvalidIDField, "InvalidIdField"},
		{DuplicateKey, "DuplicateKey"},
		{Location40324, "Location40324"},
		{TooManyRequests, "TooManyRequests"},
	}
	for _, tc := range cases {
		if got := tc.code.String(); got != tc.want {
			t.Errorf("Code(%d).String() = %q, want %q", tc.code, got, tc.want)
		}
	}
}

func TestErrorReply(t *testing.T) {
	err := fmt.Errorf("dispatch: %w", New(CommandNotFound, "no such command: '%s'", "nosuch"))
	reply := From(err).Reply()
	if err := reply.Validate(); err != nil {
		t.Fatal(err)
	}
	if ok := reply.Lookup("ok").Double(); ok != 0 {
		t.Errorf("ok = %v", ok)
	}
	if code := reply.Lookup("code"); code.Type != bsoncore.TypeInt32 || code.Int32() != 59 {
		t.Errorf("code = %v", code)
	}
	if name := reply.Lookup("codeName").StringValue(); name != "CommandNotFound" {
		t.Errorf("codeName = %q", name)
	}
	if msg := reply.Lookup("errmsg").StringValue(); msg != "no such command: 'nosuch'" {
		t.Errorf("errmsg = %q", msg)
	}
}

func TestFromHidesUnknownErrors(t *testing.T) {
	e := From(errors.New("disk on fire"))
	if e.Code != InternalError || e.Message != "internal error" {
		t.Errorf("From(plain error) = %v", e)
	}
	if !errors.Is(e, e.cause) || e.Unwrap() == nil {
		t.Error("cause lost")
	}
}

func TestWriteErrors(t *testing.T) {
	info := bsoncore.NewDocumentBuilder().
		AppendDocument("keyPattern", bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()).
		Build()
	dup := &Error{Code: DuplicateKey, Message: "E11000 duplicate key error", Info: info}
	idx, dst := bsoncore.AppendDocumentStart(nil)
	dst = AppendWriteErrors(dst, []WriteError{{Index: 3, Err: dup}})
	doc, _ := bsoncore.AppendDocumentEnd(dst, idx)
	we := bsoncore.Document(doc).Lookup("writeErrors", "0").Document()
	if we.Lookup("index").Int32() != 3 || we.Lookup("code").Int32() != 11000 {
		t.Errorf("writeErrors[0] = %v", we)
	}
	if we.Lookup("keyPattern", "_id").Int32() != 1 {
		t.Errorf("keyPattern missing: %v", we)
	}
}

// TestErrorWithContext chains a context before the message as MongoDB's addContext does,
// keeping the code, labels and extra fields, and leaves the original error alone.
func TestErrorWithContext(t *testing.T) {
	info := bsoncore.NewDocumentBuilder().AppendInt32("keyValue", 1).Build()
	e := &Error{Code: DuplicateKey, Message: "E11000 duplicate key error", Labels: []string{"L"}, Info: info}
	got := e.WithContext("Plan executor error during findAndModify")
	if want := "Plan executor error during findAndModify :: caused by :: E11000 duplicate key error"; got.Message != want {
		t.Errorf("message = %q, want %q", got.Message, want)
	}
	if got.Code != DuplicateKey || len(got.Labels) != 1 || len(got.Info) != len(info) {
		t.Errorf("WithContext lost the code, labels or info: %+v", got)
	}
	if e.Message != "E11000 duplicate key error" {
		t.Errorf("WithContext changed the original: %q", e.Message)
	}
}
