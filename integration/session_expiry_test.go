package integration

import (
	"context"
	le "encoding/binary"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// opMsg sends cmd as one OP_MSG on a fresh connection to srv and returns the reply's body:
// a client that chooses its own lsid and txnNumber, which the driver never lets one repeat.
func opMsg(t *testing.T, srv *server, cmd bson.D) bson.Raw {
	t.Helper()
	body, err := bson.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	msg := le.LittleEndian.AppendUint32(nil, 0) // flagBits
	msg = append(append(msg, 0), body...)       // section kind 0: the body
	_, rest := rawRoundTrip(t, srv, 2013, msg)
	return bson.Raw(rest[5:]) // flagBits, section kind
}

// TestSessionExpiry runs a server whose sessions expire after a second of disuse
// (--session-timeout, mongod's localLogicalSessionTimeoutMinutes): a retryable write's
// retry is answered from its record while the session lives and runs again once the
// session expired and its record went; the expired session's open transaction is aborted
// and its cursor killed.
func TestSessionExpiry(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--session-timeout", "1s")
	ctx := context.Background()
	cl := srv.client(t)
	db := cl.Database(dbName(t))
	var hello bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello); err != nil || hello["logicalSessionTimeoutMinutes"] != int32(1) {
		t.Fatalf("hello: logicalSessionTimeoutMinutes %v (%v), want 1", hello["logicalSessionTimeoutMinutes"], err)
	}
	param, err := runCmd(t, cl.Database("admin"), bson.D{{Key: "getParameter", Value: 1}, {Key: "localLogicalSessionTimeoutMinutes", Value: 1}})
	if err != nil || param["localLogicalSessionTimeoutMinutes"] != int32(1) {
		t.Fatalf("getParameter localLogicalSessionTimeoutMinutes: %v, %v", param, err)
	}
	if _, err := runCmd(t, cl.Database("admin"), bson.D{{Key: "setParameter", Value: 1}, {Key: "localLogicalSessionTimeoutMinutes", Value: 5}}); !hasCode(err, 20) {
		t.Fatalf("setParameter localLogicalSessionTimeoutMinutes: %v, want 20 IllegalOperation (startup only)", err)
	}
	lsid := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}
	insert := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}},
		{Key: "lsid", Value: lsid}, {Key: "txnNumber", Value: int64(1)}, {Key: "$db", Value: db.Name()}}
	for i := range 2 {
		if reply := opMsg(t, srv, insert); reply.Lookup("n").Int32() != 1 || reply.Lookup("writeErrors").Type != 0 {
			t.Fatalf("insert %d: %s, want n: 1 without writeErrors (a retry answered from the record)", i, reply)
		}
	}
	// An open transaction and a cursor, each in a session of the driver left unused.
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("c")
	if _, err := coll.InsertOne(mongo.NewSessionContext(ctx, sess), bson.D{{Key: "_id", Value: 2}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "_id", Value: 4}}}); err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := sess.CommitTransaction(ctx); !hasCode(err, 251) {
		t.Fatalf("commit after the session expired: %v, want 251 NoSuchTransaction", err)
	}
	for cur.Next(ctx) {
	}
	if !hasCode(cur.Err(), 43) {
		t.Fatalf("getMore after the session expired: %v, want 43 CursorNotFound", cur.Err())
	}
	reply := opMsg(t, srv, insert)
	if code, _ := reply.Lookup("writeErrors", "0", "code").Int32OK(); code != 11000 {
		t.Fatalf("insert after the session expired: %s, want E11000 (its record went with the session: the insert ran again)", reply)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Fatalf("documents: %d, %v; want 3 (_id 1, 3, 4)", n, err)
	}
}

// TestTxnLifetimeLimit checks transactionLifetimeLimitSeconds: setParameter changes it
// (getParameter reports it, 0 is refused as in MongoDB), and a transaction open longer is
// aborted by the server, whoever waits for it: a write outside it to its document goes
// through, and its next statement answers 251 NoSuchTransaction.
func TestTxnLifetimeLimit(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	ctx := context.Background()
	cl := srv.client(t)
	admin := cl.Database("admin")
	set := func(v int) (bson.M, error) {
		return runCmd(t, admin, bson.D{{Key: "setParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: v}})
	}
	if res, err := set(1); err != nil || res["was"] != int32(60) {
		t.Fatalf("setParameter transactionLifetimeLimitSeconds: %v, %v; want was: 60", res, err)
	}
	if _, err := set(0); !hasCode(err, 2) {
		t.Fatalf("setParameter transactionLifetimeLimitSeconds 0: %v, want 2 BadValue", err)
	}
	res, err := runCmd(t, admin, bson.D{{Key: "getParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 1}})
	if err != nil || res["transactionLifetimeLimitSeconds"] != int32(1) {
		t.Fatalf("getParameter transactionLifetimeLimitSeconds: %v, %v", res, err)
	}
	coll := cl.Database(dbName(t)).Collection("c")
	if err := cl.Database(dbName(t)).CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}, {Key: "by", Value: "txn"}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "by", Value: "outside"}}); err != nil {
		t.Fatalf("write outside the transaction once it expired: %v", err)
	}
	if waited := time.Since(start); waited < 500*time.Millisecond || waited > 5*time.Second {
		t.Fatalf("the write outside waited %s for the transaction, want about its lifetime (1 s)", waited)
	}
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 2}}); !hasCode(err, 251) {
		t.Fatalf("statement of the expired transaction: %v, want 251 NoSuchTransaction", err)
	}
	var doc bson.M
	if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: 1}}).Decode(&doc); err != nil || doc["by"] != "outside" {
		t.Fatalf("document: %v, %v; want the write outside", doc, err)
	}
}

// TestAfterClusterTimeAhead checks a causally consistent read after an operation time the
// server never gave: mongod answers 72 InvalidOptions rather than moving its clock, and so
// does cleave; a time it gave is read after at once.
func TestAfterClusterTimeAhead(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	ctx := context.Background()
	cl := srv.client(t)
	coll := cl.Database(dbName(t)).Collection("c")
	sess, err := cl.StartSession(options.Session().SetCausalConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	if _, err := coll.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := coll.FindOne(sctx, bson.D{{Key: "_id", Value: 1}}).Err(); err != nil {
		t.Fatalf("read after the session's write: %v", err)
	}
	ahead := bson.Timestamp{T: uint32(time.Now().Add(time.Hour).Unix())}
	if err := sess.AdvanceOperationTime(&ahead); err != nil {
		t.Fatal(err)
	}
	err = coll.FindOne(sctx, bson.D{{Key: "_id", Value: 1}}).Err()
	if !hasCode(err, 72) || !strings.Contains(err.Error(), "value must not be greater than the current clusterTime") {
		t.Fatalf("read after a time ahead of the cluster time: %v, want 72 InvalidOptions", err)
	}
}
