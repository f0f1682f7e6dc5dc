package integration

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestMongodFlags: a command line written for mongod (--dbpath, --port, --bind_ip) starts
// cleave listening there and storing there.
func TestMongodFlags(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	dbpath := filepath.Join(t.TempDir(), "db")
	addrFile := filepath.Join(t.TempDir(), "addr")
	log := &syncBuffer{}
	cmd := exec.Command(binary, "--dbpath", dbpath, "--port", strconv.Itoa(port), "--bind_ip", "127.0.0.1",
		"--http-addr", "", "--addr-file", addrFile)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			if want := "127.0.0.1:" + strconv.Itoa(port); string(b) != want {
				t.Fatalf("listening on %s, want %s", b, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cleave did not start:\n%s", log.String())
		}
	}
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://127.0.0.1:" + strconv.Itoa(port)).
		SetServerSelectionTimeout(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Disconnect(ctx) }()
	coll := c.Database("flags").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert: %v\n%s", err, log.String())
	}
	if n, err := coll.CountDocuments(ctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("count: %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dbpath, "shard-0")); err != nil {
		t.Fatalf("the data is not under --dbpath: %v", err)
	}
}
