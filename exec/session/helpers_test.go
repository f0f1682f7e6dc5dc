package session_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/cursor"
	"github.com/cleavedb/cleave/exec/internal/fixture"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// env is a session cache wired as the server wires it: real stores, the catalog, the write
// path, the transactions and the cursors its sessions close.
type env struct {
	cat     *catalog.Catalog
	wp      *write.Path
	txns    *txn.Registry
	cursors *cursor.Registry
	c       *session.Cache
}

// newEnv opens one store and a session cache of the given timeout (0: the default) over it,
// closed when the test ends.
func newEnv(t *testing.T, timeout time.Duration) *env {
	t.Helper()
	cat := fixture.Stores(t, 1)
	e := &env{cat: cat, txns: txn.NewRegistry(cat, nil), cursors: cursor.NewRegistry(time.Hour, nil)}
	e.wp = write.NewPath(cat, query.New(cat, query.Options{}), nil).WithGate(e.txns)
	e.txns.Use(e.wp)
	t.Cleanup(e.cursors.CloseAll)
	e.c = session.New(session.Options{Timeout: timeout, Cursors: e.cursors, Txns: e.txns, Cat: cat,
		Started: time.Now(), Log: zap.NewNop()})
	return e
}

// id returns the session UUID whose bytes are all b.
func id(b byte) [16]byte {
	var k [16]byte
	for i := range k {
		k[i] = b
	}
	return k
}

// lsidJSON is the Extended JSON of {id: k}.
func lsidJSON(k [16]byte) string {
	return `{"id": ` + binJSON(k[:], 4) + `}`
}

// binJSON is the Extended JSON of BinData(subtype, b).
func binJSON(b []byte, subtype byte) string {
	v := bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, subtype, b)}
	return v.String()
}

// ext parses a document in Extended JSON.
func ext(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	return streamtest.ExtDoc(t, s)
}

// openCursor registers a cursor of session k (none when k is nil) and returns its id.
func (e *env) openCursor(k *[16]byte) int64 {
	c := &cursor.Cursor{Stream: stream.Empty{}, Ns: "db.c"}
	if k != nil {
		c.LSID, c.HasSession = *k, true
	}
	return e.cursors.Add(c)
}

// cursorOpen reports whether cursor id is still registered.
func (e *env) cursorOpen(id int64) bool {
	c, err := e.cursors.Acquire(id)
	if err != nil {
		return false
	}
	e.cursors.Done(c, false)
	return true
}

// cached reports whether session k is in the cache.
func (e *env) cached(k [16]byte) bool {
	for _, en := range e.c.Entries() {
		if en.ID == k {
			return true
		}
	}
	return false
}

// begin starts transaction n of session k through EnterTxn, checking the session back in.
func (e *env) begin(t *testing.T, k [16]byte, n int64) *txn.Txn {
	t.Helper()
	tx, release, err := e.enter(t, k, n, true, "insert", "")
	if err != nil || tx == nil {
		t.Fatalf("starting transaction %d: %v", n, err)
	}
	release()
	return tx
}

// enter runs EnterTxn for command name of transaction n of session k (startTransaction when
// start), with extra fields (Extended JSON, "" for none) in its body.
func (e *env) enter(t *testing.T, k [16]byte, n int64, start bool, name, extra string) (*txn.Txn, func(), error) {
	t.Helper()
	body := `{"` + name + `": "c", "lsid": ` + lsidJSON(k) + `, "txnNumber": {"$numberLong": "` +
		itoa(n) + `"}, "autocommit": false`
	if start {
		body += `, "startTransaction": true`
	}
	if extra != "" {
		body += ", " + extra
	}
	d := ext(t, body+"}")
	st := &session.Statement{Name: name, Body: d, InTxn: true, Storage: true,
		Autocommit: d.Lookup("autocommit"), StartTxn: d.Lookup("startTransaction"), TxnNumber: d.Lookup("txnNumber")}
	return e.c.EnterTxn(st, e.txns, e.wp)
}

// itoa formats n.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// retryBody is an insert of session k's retryable write txnNumber n.
func retryBody(t testing.TB, k [16]byte, n int64) bsoncore.Document {
	return ext(t, `{"insert": "c", "lsid": `+lsidJSON(k)+`, "txnNumber": {"$numberLong": "`+itoa(n)+`"}}`)
}

// insert inserts docs (Extended JSON) into db.c through the write path, recording them in rt
// when it is not nil.
func (e *env) insert(t *testing.T, rt *write.Retry, docs ...string) {
	t.Helper()
	ci, err := e.cat.Lookup("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	if ci == nil {
		ci = fixture.Create(t, e.cat, store.Collection{DB: "db", Name: "c"})
	}
	vals := make([]bsoncore.Value, len(docs))
	for i, d := range docs {
		vals[i] = bsonx.DocValue(ext(t, d))
	}
	var res write.Results
	if _, err := e.wp.Insert(context.Background(), ci, vals, 0, true, false, write.Concern{}, &res, rt); err != nil || len(res.Errs) > 0 {
		t.Fatalf("insert: %v %v", err, res.Errs)
	}
}

// hasRecord reports whether the store holds a transaction record of session k.
func (e *env) hasRecord(t *testing.T, k [16]byte) bool {
	t.Helper()
	found := false
	if err := e.cat.Shards()[0].TxnRecords(func(lsid, _ []byte) error {
		found = found || string(lsid) == string(k[:])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return found
}

// wantCode fails unless err is MongoDB's error code whose message starts with msg; code 0
// wants no error.
func wantCode(t testing.TB, err error, code mongoerr.Code, msg string) {
	t.Helper()
	if code == 0 {
		if err != nil {
			t.Fatalf("unexpected error %v", err)
		}
		return
	}
	me := mongoerr.As(err)
	if me == nil || me.Code != code || !strings.HasPrefix(me.Message, msg) {
		t.Fatalf("error %v, want %s (%d) %q", err, code, int32(code), msg)
	}
}

// bytesOf returns k's bytes.
func bytesOf(k [16]byte) []byte { return k[:] }
