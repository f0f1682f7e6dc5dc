package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestDumpLoadDumpByteForByte dumps a database (a collection sharded over two shards holding
// documents of every common BSON type, and the every-type documents of the dump tests in an
// unsharded one), loads the dump into a fresh server of two shards, dumps that again, and
// checks that the two dumps' .bson files are byte for byte the same and that both servers'
// data has the same checksum (the SHA-256 of every document in _id order). 20,000
// documents here; `make dump-roundtrip` (CLEAVE_LONG=1) does it with 1,000,000.
func TestDumpLoadDumpByteForByte(t *testing.T) {
	t.Parallel()
	n := 20000
	if os.Getenv("CLEAVE_LONG") != "" {
		n = 1000000
	}
	ctx := context.Background()
	a := startServer(t, "--shards", "2")
	ca := a.client(t)
	db := dbName(t)
	if err := ca.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: db + ".big"}, {Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	fillRoundTrip(t, ca.Database(db).Collection("big"), n)
	if _, err := ca.Database(db).Collection("types").InsertMany(ctx, dumpTypesDocs()); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	first, second := filepath.Join(tmp, "first"), filepath.Join(tmp, "second")
	t.Logf("dump: %s", runTool(t, "dump", "--uri", a.uri(), "--db", db, "--out", first))
	b := startServer(t, "--shards", "2")
	t.Logf("load: %s", runTool(t, "load", "--uri", b.uri(), first))
	t.Logf("dump again: %s", runTool(t, "dump", "--uri", b.uri(), "--db", db, "--out", second))
	for _, coll := range []string{"big", "types"} {
		name := filepath.Join(db, coll+".bson")
		x, err := os.ReadFile(filepath.Join(first, name))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(second, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s: the dumps differ (%d and %d bytes, sha256 %s and %s)", name, len(x), len(y), sum(x), sum(y))
		} else {
			t.Logf("%s: %d bytes, the same in both dumps, sha256 %s", name, len(x), sum(x))
		}
		da, ca2 := dataChecksum(t, ca.Database(db).Collection(coll))
		db2, cb := dataChecksum(t, b.client(t).Database(db).Collection(coll))
		if da != db2 || ca2 != cb {
			t.Errorf("%s: data checksum %s (%d documents) on the first server, %s (%d) on the second", coll, da, ca2, db2, cb)
		}
	}
}

// fillRoundTrip inserts n documents of the common BSON types into c, in batches of 1000.
func fillRoundTrip(t *testing.T, c *mongo.Collection, n int) {
	t.Helper()
	dec, _ := bson.ParseDecimal128("12.50")
	batch := make([]any, 0, 1000)
	for i := range n {
		batch = append(batch, bson.D{{Key: "_id", Value: int64(i)}, {Key: "k", Value: int32(i % 9973)},
			{Key: "s", Value: fmt.Sprintf("doc-%07d-é", i)}, {Key: "f", Value: float64(i) / 7}, {Key: "b", Value: i%3 == 0},
			{Key: "at", Value: bson.DateTime(1704067200000 + int64(i)*1000)}, {Key: "oid", Value: bson.NewObjectID()},
			{Key: "dec", Value: dec}, {Key: "bin", Value: bson.Binary{Subtype: 0, Data: []byte{byte(i), byte(i >> 8)}}},
			{Key: "sub", Value: bson.D{{Key: "a", Value: bson.A{int32(i), "x", nil}}, {Key: "n", Value: int64(i) << 33}}}})
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := c.InsertMany(context.Background(), batch, options.InsertMany().SetOrdered(false)); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// dataChecksum returns the SHA-256 of c's documents, raw, in _id order, and their number.
func dataChecksum(t *testing.T, c *mongo.Collection) (string, int) {
	t.Helper()
	cur, err := c.Find(context.Background(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n := 0
	for cur.Next(context.Background()) {
		h.Write(cur.Current)
		n++
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// sum is the SHA-256 of b, in hex.
func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
