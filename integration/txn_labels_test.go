package integration

import (
	"context"
	"errors"
	"sync"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestTxnErrorLabels checks the labels the server gives, as mongod's ErrorLabelBuilder
// does, to errors that carry none of their own (a failCommand without errorLabels): in a
// transaction a transient code (112, 251, 91) is TransientTransactionError on a statement;
// on commit NoSuchTransaction is, and a retryable code is RetryableWriteError instead.
func TestTxnErrorLabels(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--test-commands")
	cl := srv.client(t, options.Client().SetRetryWrites(false))
	ctx := context.Background()
	c := cl.Database(dbName(t)).Collection("c")
	if err := cl.Database(dbName(t)).CreateCollection(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, cmd string
		code      int
		want      string
	}{
		{"WriteConflictOnInsert", "insert", 112, "TransientTransactionError"},
		{"NoSuchTransactionOnInsert", "insert", 251, "TransientTransactionError"},
		{"ShutdownOnInsert", "insert", 91, "TransientTransactionError"},
		{"NoSuchTransactionOnCommit", "commitTransaction", 251, "TransientTransactionError"},
		{"ShutdownOnCommit", "commitTransaction", 91, "RetryableWriteError"},
		{"LockTimeoutOnCommit", "commitTransaction", 24, "TransientTransactionError"},
		{"DuplicateKeyOnInsert", "insert", 11000, ""},
	}
	failPointOff(t, cl)
	for _, tc := range cases {
		// Two: the driver retries a commit once after a retryable error.
		setFailPoint(t, cl, bson.D{{Key: "times", Value: 2}},
			bson.D{{Key: "failCommands", Value: bson.A{tc.cmd}}, {Key: "errorCode", Value: tc.code}})
		sess, err := cl.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		sctx := mongo.NewSessionContext(ctx, sess)
		_, err = c.InsertOne(sctx, bson.D{})
		if tc.cmd == "commitTransaction" {
			if err != nil {
				t.Fatalf("%s: insert: %v", tc.name, err)
			}
			err = sess.CommitTransaction(ctx)
		}
		var le interface{ HasErrorLabel(string) bool }
		if !errors.As(err, &le) || !hasCode(err, tc.code) {
			t.Fatalf("%s: %v, want code %d", tc.name, err, tc.code)
		}
		for _, l := range []string{"TransientTransactionError", "RetryableWriteError"} {
			if le.HasErrorLabel(l) != (l == tc.want) {
				t.Errorf("%s: %v: label %s present = %v, want %v", tc.name, err, l, le.HasErrorLabel(l), l == tc.want)
			}
		}
		sess.EndSession(ctx)
		setFailPoint(t, cl, "off", nil)
	}
}

// TestTxnRecoveryToken checks that the replies of a transaction's statements carry the
// recoveryToken a mongos returns, which the driver then sends with commitTransaction.
func TestTxnRecoveryToken(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	var mu sync.Mutex
	var tokens []bson.Raw
	var commitHasToken bool
	mon := &event.CommandMonitor{
		Started: func(_ context.Context, e *event.CommandStartedEvent) {
			if e.CommandName == "commitTransaction" {
				_, err := e.Command.LookupErr("recoveryToken")
				mu.Lock()
				commitHasToken = err == nil
				mu.Unlock()
			}
		},
		Succeeded: func(_ context.Context, e *event.CommandSucceededEvent) {
			if v, err := e.Reply.LookupErr("recoveryToken"); err == nil {
				mu.Lock()
				tokens = append(tokens, v.Document())
				mu.Unlock()
			}
		},
	}
	cl := srv.client(t, options.Client().SetMonitor(mon))
	ctx := context.Background()
	c := cl.Database(dbName(t)).Collection("c")
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	if len(tokens) != 0 {
		t.Fatalf("a write outside a transaction answered recoveryToken %v", tokens)
	}
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	_, err = sess.WithTransaction(ctx, func(sctx context.Context) (any, error) {
		return c.InsertOne(sctx, bson.D{{Key: "_id", Value: 1}})
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) == 0 || !commitHasToken {
		t.Fatalf("tokens %v, commit sent one: %v", tokens, commitHasToken)
	}
	if id, ok := tokens[0].Lookup("recoveryShardId").StringValueOK(); !ok || id != "shard-0" {
		t.Fatalf("recoveryToken %v, want {recoveryShardId: \"shard-0\"}", tokens[0])
	}
}
