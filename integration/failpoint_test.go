package integration

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// setFailPoint runs configureFailPoint for failCommand and returns the reply's count.
func setFailPoint(t *testing.T, cl *mongo.Client, mode any, data bson.D) int32 {
	t.Helper()
	cmd := bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: mode}}
	if data != nil {
		cmd = append(cmd, bson.E{Key: "data", Value: data})
	}
	res, err := runCmd(t, cl.Database("admin"), cmd)
	if err != nil {
		t.Fatalf("configureFailPoint: %v", err)
	}
	n, ok := res["count"].(int32)
	if !ok {
		t.Fatalf("count = %#v (%T), want an int32", res["count"], res["count"])
	}
	return n
}

// failPointOff turns failCommand off when the test ends.
func failPointOff(t *testing.T, cl *mongo.Client) {
	t.Cleanup(func() {
		_, _ = runCmd(t, cl.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}})
	})
}

// hasCode reports whether err is a server error with code (a command error, a write
// error or a write concern error).
func hasCode(err error, code int) bool {
	var se mongo.ServerError
	return errors.As(err, &se) && se.HasErrorCode(code)
}

// TestConfigureFailPoint drives failCommand the way the drivers' spec tests do. Failpoints
// are server-wide, so the cases share one server and run one after the other.
func TestConfigureFailPoint(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--test-commands")
	cl := srv.client(t, options.Client().SetRetryWrites(false).SetRetryReads(false))
	c := cl.Database("fp").Collection("c")
	ctx := context.Background()
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}); err != nil {
		t.Fatal(err)
	}
	t.Run("ErrorCodeTimes", func(t *testing.T) { testFailPointErrorCode(t, cl, c) })
	t.Run("Skip", func(t *testing.T) { testFailPointSkip(t, cl, c) })
	t.Run("CloseConnection", func(t *testing.T) { testFailPointClose(t, cl, c) })
	t.Run("ErrorLabels", func(t *testing.T) { testFailPointLabels(t, cl, c) })
	t.Run("WriteConcernError", func(t *testing.T) { testFailPointWCE(t, cl, c) })
	t.Run("BlockConnection", func(t *testing.T) { testFailPointBlock(t, cl, c) })
	t.Run("AppName", func(t *testing.T) { testFailPointAppName(t, srv, cl) })
	t.Run("RetryableWrite", func(t *testing.T) { testFailPointRetry(t, srv, cl) })
	t.Run("BadArguments", func(t *testing.T) { testFailPointBadArgs(t, cl) })
}

func testFailPointErrorCode(t *testing.T, cl *mongo.Client, c *mongo.Collection) {
	failPointOff(t, cl)
	ctx := context.Background()
	before := setFailPoint(t, cl, bson.D{{Key: "times", Value: 2}},
		bson.D{{Key: "failCommands", Value: bson.A{"insert", "count"}}, {Key: "errorCode", Value: 8}})
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 8 || ce.Name != "UnknownError" ||
		ce.Message != "Failing command via 'failCommand' failpoint" {
		t.Fatalf("insert error = %#v", err)
	}
	if _, err := c.EstimatedDocumentCount(ctx); !hasCode(err, 8) {
		t.Fatalf("count error = %v", err)
	}
	// Two times used up: the failpoint is off again, and nothing was inserted.
	if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("third insert: %v", err)
	}
	if n := setFailPoint(t, cl, "off", nil); n != before+2 {
		t.Errorf("count = %d, want %d", n, before+2)
	}
	// find is not in failCommands and never failed.
	if err := c.FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Errorf("find: %v", err)
	}
}

func testFailPointSkip(t *testing.T, cl *mongo.Client, c *mongo.Collection) {
	failPointOff(t, cl)
	ctx := context.Background()
	setFailPoint(t, cl, bson.D{{Key: "skip", Value: 1}},
		bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "errorCode", Value: 2}})
	if err := c.FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("skipped find: %v", err)
	}
	for i := 0; i < 2; i++ {
		if err := c.FindOne(ctx, bson.D{}).Err(); !hasCode(err, 2) {
			t.Fatalf("find %d after the skip: %v", i, err)
		}
	}
}

func testFailPointClose(t *testing.T, cl *mongo.Client, c *mongo.Collection) {
	failPointOff(t, cl)
	ctx := context.Background()
	setFailPoint(t, cl, bson.D{{Key: "times", Value: 1}},
		bson.D{{Key: "failCommands", Value: bson.A{"find"}}, {Key: "closeConnection", Value: true}})
	err := c.FindOne(ctx, bson.D{}).Err()
	if err == nil || !mongo.IsNetworkError(err) {
		t.Fatalf("find error = %v, want a network error", err)
	}
	if err := c.FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("find after the closed connection: %v", err)
	}
}

func testFailPointLabels(t *testing.T, cl *mongo.Client, c *mongo.Collection) {
	failPointOff(t, cl)
	ctx := context.Background()
	setFailPoint(t, cl, "alwaysOn", bson.D{{Key: "failCommands", Value: bson.A{"delete"}},
		{Key: "errorCode", Value: 91}, {Key: "errorLabels", Value: bson.A{"CustomLabel"}}})
	_, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 100}})
	var se mongo.ServerError
	if !errors.As(err, &se) || !se.HasErrorCode(91) || !se.HasErrorLabel("CustomLabel") ||
		se.HasErrorLabel("RetryableWriteError") {
		t.Fatalf("delete error = %v", err)
	}
}

func testFailPointWCE(t *testing.T, cl *mongo.Client, c *mongo.Collection) {
	failPointOff(t, cl)
	ctx := context.Background()
	setFailPoint(t, cl, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"insert"}},
		{Key: "writeConcernError", Value: bson.D{{Key: "code", Value: 64}, {Key: "errmsg", Value: "waiting for replication timed out"}}}})
	_, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: "wce"}})
	var we mongo.WriteException
	if !errors.As(err, &we) || we.WriteConcernError == nil || we.WriteConcernError.Code != 64 {
		t.Fatalf("insert error = %#v", err)
	}
	// The write itself happened, as on mongod.
	if err := c.FindOne(ctx, bson.D{{Key: "_id", Value: "wce"}}).Err(); err != nil {
		t.Fatalf("document written under the writeConcernError: %v", err)
	}
}

func testFailPointBlock(t *testing.T, cl *mongo.Client, c *mongo.Collection) {
	failPointOff(t, cl)
	ctx := context.Background()
	setFailPoint(t, cl, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"find"}},
		{Key: "blockConnection", Value: true}, {Key: "blockTimeMS", Value: 300}})
	start := time.Now()
	if err := c.FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("blocked find: %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("find took %v, want at least 300ms", d)
	}
	setFailPoint(t, cl, bson.D{{Key: "times", Value: 1}}, bson.D{{Key: "failCommands", Value: bson.A{"find"}},
		{Key: "blockConnection", Value: true}})
	if err := c.FindOne(ctx, bson.D{}).Err(); !hasCode(err, 72) {
		t.Errorf("find blocked without blockTimeMS: %v, want InvalidOptions", err)
	}
}

func testFailPointAppName(t *testing.T, srv *server, cl *mongo.Client) {
	failPointOff(t, cl)
	ctx := context.Background()
	named := srv.client(t, options.Client().SetAppName("victim").SetRetryReads(false))
	setFailPoint(t, cl, "alwaysOn", bson.D{{Key: "failCommands", Value: bson.A{"find"}},
		{Key: "errorCode", Value: 11600}, {Key: "appName", Value: "victim"}})
	if err := named.Database("fp").Collection("c").FindOne(ctx, bson.D{}).Err(); !hasCode(err, 11600) {
		t.Fatalf("find from appName victim: %v", err)
	}
	if err := cl.Database("fp").Collection("c").FindOne(ctx, bson.D{}).Err(); err != nil {
		t.Fatalf("find from another application: %v", err)
	}
}

func testFailPointRetry(t *testing.T, srv *server, cl *mongo.Client) {
	failPointOff(t, cl)
	ctx := context.Background()
	retrying := srv.client(t, options.Client().SetRetryWrites(true))
	before := setFailPoint(t, cl, bson.D{{Key: "times", Value: 1}},
		bson.D{{Key: "failCommands", Value: bson.A{"insert"}}, {Key: "errorCode", Value: 91}})
	// The server labels ShutdownInProgress of a retryable write RetryableWriteError, so the
	// driver retries it once, and the retry succeeds.
	if _, err := retrying.Database("fp").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: "retried"}}); err != nil {
		t.Fatalf("retryable insert: %v", err)
	}
	if n := setFailPoint(t, cl, "off", nil); n != before+1 {
		t.Errorf("count = %d, want %d", n, before+1)
	}
}

func testFailPointBadArgs(t *testing.T, cl *mongo.Client) {
	admin := cl.Database("admin")
	cases := []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"UnknownFailPoint", bson.D{{Key: "configureFailPoint", Value: "nosuch"}, {Key: "mode", Value: "off"}}, 266},
		{"NoMode", bson.D{{Key: "configureFailPoint", Value: "failCommand"}}, 20},
		{"UnknownMode", bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "sometimes"}}, 2},
		{"NegativeTimes", bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: bson.D{{Key: "times", Value: -1}}}}, 2},
		{"DataNotObject", bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}, {Key: "data", Value: 1}}, 14},
	}
	for _, tc := range cases {
		_, err := runCmd(t, admin, tc.cmd)
		var ce mongo.CommandError
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%s: error = %v, want code %d", tc.name, err, tc.code)
		}
	}
	_, err := runCmd(t, cl.Database("fp"), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}})
	if !hasCode(err, 13) {
		t.Errorf("configureFailPoint outside admin: %v, want Unauthorized", err)
	}
}

func TestConfigureFailPointNeedsTestCommands(t *testing.T) {
	t.Parallel()
	cl := sharedServer(t).client(t)
	_, err := runCmd(t, cl.Database("admin"), bson.D{{Key: "configureFailPoint", Value: "failCommand"}, {Key: "mode", Value: "off"}})
	var ce mongo.CommandError
	if !errors.As(err, &ce) || ce.Code != 59 || ce.Message != "no such command: 'configureFailPoint'" {
		t.Fatalf("configureFailPoint without --test-commands: %v", err)
	}
}
