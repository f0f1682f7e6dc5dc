package integration

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/event"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// helloVersion runs hello and returns its topologyVersion.
func helloVersion(t *testing.T, c *mongo.Client) bson.D {
	t.Helper()
	var r struct {
		TopologyVersion bson.D `bson:"topologyVersion"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "hello", Value: 1}}).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if len(r.TopologyVersion) != 2 || r.TopologyVersion[0].Key != "processId" || r.TopologyVersion[1].Key != "counter" {
		t.Fatalf("topologyVersion %v, want {processId, counter}", r.TopologyVersion)
	}
	if _, ok := r.TopologyVersion[0].Value.(bson.ObjectID); !ok || r.TopologyVersion[1].Value != int64(0) {
		t.Fatalf("topologyVersion %v, want an ObjectId and the counter 0", r.TopologyVersion)
	}
	return r.TopologyVersion
}

// TestHelloAwaitable: hello answers a topologyVersion; an awaitable hello with another
// process's version, or an older counter, answers at once; the arguments are checked as
// mongos checks them; and the Go driver, seeing the version, monitors by streaming
// (awaited heartbeats).
func TestHelloAwaitable(t *testing.T) {
	t.Parallel()
	srv := sharedServer(t)
	c := srv.client(t)
	tv := helloVersion(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := c.Database("admin")
	// Another process id, or an older counter than the server's (none: 0 is the first),
	// answers at once: with a ten-minute wait, anything else ends at the context's timeout.
	other := bson.D{{Key: "processId", Value: bson.NewObjectID()}, {Key: "counter", Value: int64(0)}}
	if err := admin.RunCommand(ctx, bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: other},
		{Key: "maxAwaitTimeMS", Value: 600000}}).Err(); err != nil {
		t.Fatalf("awaitable hello with another process id: %v", err)
	}
	pid := tv[0].Value
	for _, tc := range []struct {
		cmd  bson.D
		code int32
	}{
		{bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}}, 51760},
		{bson.D{{Key: "hello", Value: 1}, {Key: "maxAwaitTimeMS", Value: 10}}, 51760},
		{bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: -1}}, 51759},
		{bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: pid}, {Key: "counter", Value: int64(-1)}}},
			{Key: "maxAwaitTimeMS", Value: 10}}, 51758},
		{bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: bson.D{{Key: "processId", Value: pid}, {Key: "counter", Value: int64(5)}}},
			{Key: "maxAwaitTimeMS", Value: 10}}, 51761},
		{bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: "x"}, {Key: "maxAwaitTimeMS", Value: 10}}, 14},
		{bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv}, {Key: "maxAwaitTimeMS", Value: "x"}}, 14},
	} {
		var ce mongo.CommandError
		if err := admin.RunCommand(ctx, tc.cmd).Err(); !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%v: %v, want code %d", tc.cmd, err, tc.code)
		}
	}
	// The driver streams: some heartbeat is an awaited one.
	var awaited atomic.Int32
	mon := &event.ServerMonitor{ServerHeartbeatSucceeded: func(e *event.ServerHeartbeatSucceededEvent) {
		if e.Awaited {
			awaited.Add(1)
		}
	}}
	sc := srv.client(t, options.Client().SetHeartbeatInterval(500*time.Millisecond).SetServerMonitor(mon))
	if err := sc.Ping(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for awaited.Load() == 0 {
		select {
		case <-ctx.Done():
			t.Fatal("no awaited heartbeat: the driver does not stream")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestHelloQuiesce: at shutdown, a waiting awaitable hello answers ShutdownInProgress with
// the incremented topologyVersion (mongos's quiesce mode), and the server then stops.
func TestHelloQuiesce(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.client(t)
	tv := helloVersion(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		got <- c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}, {Key: "topologyVersion", Value: tv},
			{Key: "maxAwaitTimeMS", Value: 600000}}).Err()
	}()
	// The hello is waiting once currentOp lists it.
	for {
		var ops struct {
			Inprog []bson.M `bson:"inprog"`
		}
		if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}, {Key: "command.maxAwaitTimeMS", Value: 600000}}).Decode(&ops); err != nil {
			t.Fatal(err)
		}
		if len(ops.Inprog) > 0 {
			break
		}
		select {
		case err := <-got:
			t.Fatalf("the awaitable hello answered before shutdown: %v", err)
		case <-ctx.Done():
			t.Fatal("the awaitable hello never showed in currentOp")
		case <-time.After(20 * time.Millisecond):
		}
	}
	go srv.stop()
	var ce mongo.CommandError
	if err := <-got; !errors.As(err, &ce) || ce.Code != 91 || ce.Message != "Mongos is in quiesce mode and will shut down" {
		t.Fatalf("awaitable hello at shutdown: %v, want ShutdownInProgress 91", err)
	}
	raw := ce.Raw
	if v, err := raw.LookupErr("topologyVersion", "counter"); err != nil || v.Int64() != 1 {
		t.Fatalf("the error's topologyVersion counter %v (%v), want 1", v, err)
	}
}
