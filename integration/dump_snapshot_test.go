package integration

import (
	"context"
	binenc "encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestDumpSnapshotOneClusterTime runs `cleave dump --snapshot` while a client inserts each
// document into collection a, then, once acknowledged, into collection b: a dump of both at
// one cluster time holds in b only documents that are in a, and at most one of a's is
// missing from b (the one between its two inserts). A dump reading a and then b with
// ordinary queries would find in b documents inserted after it read a.
func TestDumpSnapshotOneClusterTime(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--shards", "2")
	c := s.client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	var filler []any
	for i := range 20000 { // a takes a while to read
		filler = append(filler, bson.D{{Key: "_id", Value: fmt.Sprintf("f%05d", i)}, {Key: "pad", Value: strings.Repeat("x", 100)}})
	}
	if _, err := db.Collection("a").InsertMany(ctx, filler); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var werr error
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, coll := range []string{"a", "b"} {
				if _, err := db.Collection(coll).InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("w%06d", i)}}); err != nil {
					werr = err
					return
				}
			}
		}
	})
	waitFor(t, 30*time.Second, "the writer's first documents", func() bool {
		n, _ := db.Collection("b").EstimatedDocumentCount(ctx)
		return n > 10
	})
	dir := t.TempDir()
	out := runTool(t, "dump", "--uri", s.uri(), "--db", db.Name(), "--snapshot", "--out", dir)
	close(stop)
	wg.Wait()
	if werr != nil {
		t.Fatal(werr)
	}
	if !strings.Contains(out, "dumped at cluster time Timestamp(") {
		t.Errorf("cleave dump --snapshot does not say its cluster time:\n%s", out)
	}
	a, b := dumpedIDs(t, dir, db.Name(), "a"), dumpedIDs(t, dir, db.Name(), "b")
	for id := range b {
		if !a[id] {
			t.Errorf("b holds %s, which a lacks: the dump is not of one cluster time", id)
		}
	}
	if missing := len(a) - 20000 - len(b); missing < 0 || missing > 1 {
		t.Errorf("a holds %d of the writer's documents, b %d: want the same, or one more in a", len(a)-20000, len(b))
	}
	t.Logf("a: %d documents, b: %d", len(a), len(b))
}

// dumpedIDs returns the _id of every document of coll's .bson file in a dump directory,
// read document by document.
func dumpedIDs(t *testing.T, dir, db, coll string) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, db, coll+".bson"))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for len(data) > 0 {
		n := int(binenc.LittleEndian.Uint32(data))
		doc := bson.Raw(data[:n])
		if err := doc.Validate(); err != nil {
			t.Fatal(err)
		}
		ids[doc.Lookup("_id").StringValue()] = true
		data = data[n:]
	}
	return ids
}
