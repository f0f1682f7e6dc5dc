package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// renameRaceRound is one round of TestRenameDropTargetRacingInserts: the inserts
// acknowledged into its target and what the target held after the round.
type renameRaceRound struct {
	source, target string
	acked          []string
	final          map[string]bool
}

// TestRenameDropTargetRacingInserts: inserts into a collection that renameCollection replaces
// (dropTarget: true) while they run either land in the collection dropped by the rename — and
// their change events come before the rename's — or in the renamed collection that takes the
// name, with their events after it: an acknowledged insert is never in the dropped collection
// with an event after the rename, nor in the new one with an event before it. Each round
// renames while four clients insert without pause, and the inserts go on after it.
func TestRenameDropTargetRacingInserts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := sharedServer(t).client(t)
	db := cl.Database(dbName(t))
	cs, err := db.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	const rounds, inserters = 12, 4
	var all []*renameRaceRound
	for round := range rounds {
		rr := &renameRaceRound{source: fmt.Sprintf("s%d", round), target: fmt.Sprintf("t%d", round)}
		all = append(all, rr)
		renameRaceOnce(t, db, rr, inserters)
	}
	if _, err := db.Collection("sentinel").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	// Where each round's rename and each acknowledged insert sit in the database's stream.
	renamedAt := map[string]int{} // by source
	insertedAt := map[string]int{}
	for i := 0; cs.Next(ctx); i++ {
		var ev struct {
			Op  string                `bson:"operationType"`
			NS  struct{ Coll string } `bson:"ns"`
			Key struct {
				ID any `bson:"_id"`
			} `bson:"documentKey"`
		}
		if err := cs.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.NS.Coll == "sentinel" {
			break
		}
		switch ev.Op {
		case "rename":
			renamedAt[ev.NS.Coll] = i
		case "insert":
			if id, ok := ev.Key.ID.(string); ok {
				insertedAt[ev.NS.Coll+"/"+id] = i
			}
		}
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	for _, rr := range all {
		at, ok := renamedAt[rr.source]
		if !ok {
			t.Fatalf("no rename event for %s", rr.source)
		}
		for _, id := range rr.acked {
			ev, ok := insertedAt[rr.target+"/"+id]
			switch {
			case !ok:
				t.Errorf("%s: acknowledged insert %s has no change event", rr.target, id)
			case ev > at && !rr.final[id]:
				t.Errorf("%s: insert %s's event comes after the rename's, but the document went with the dropped collection", rr.target, id)
			case ev < at && rr.final[id]:
				t.Errorf("%s: insert %s's event comes before the rename's, but the document is in the renamed collection", rr.target, id)
			}
		}
	}
}

// renameRaceOnce runs one round: inserters insert into rr.target without pause; once each
// has inserted some documents, rr.source replaces rr.target (dropTarget), and once each has
// inserted some more, they stop and the round reads what rr.target holds.
func renameRaceOnce(t *testing.T, db *mongo.Database, rr *renameRaceRound, inserters int) {
	ctx := context.Background()
	if _, err := db.Collection(rr.target).InsertOne(ctx, bson.D{{Key: "_id", Value: "old"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection(rr.source).InsertOne(ctx, bson.D{{Key: "_id", Value: "src"}}); err != nil {
		t.Fatal(err)
	}
	const before, after = 5, 5
	var stop atomic.Bool
	var renamed atomic.Bool
	var mu sync.Mutex
	var wg sync.WaitGroup
	ready := make(chan struct{}, inserters)
	done := make(chan struct{}, inserters)
	for g := range inserters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := db.Collection(rr.target)
			n, sinceRename := 0, 0
			for k := 0; !stop.Load(); k++ {
				id := fmt.Sprintf("w%d-%d", g, k)
				if _, err := c.InsertOne(ctx, bson.D{{Key: "_id", Value: id}}); err != nil {
					t.Errorf("insert %s: %v", id, err)
					return
				}
				mu.Lock()
				rr.acked = append(rr.acked, id)
				mu.Unlock()
				if n++; n == before {
					ready <- struct{}{}
				}
				if renamed.Load() {
					if sinceRename++; sinceRename == after {
						done <- struct{}{}
					}
				}
			}
		}()
	}
	for range inserters {
		<-ready
	}
	err := db.Client().Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: db.Name() + "." + rr.source},
		{Key: "to", Value: db.Name() + "." + rr.target}, {Key: "dropTarget", Value: true}}).Err()
	if err != nil {
		t.Fatal(err)
	}
	renamed.Store(true)
	for range inserters {
		<-done
	}
	stop.Store(true)
	wg.Wait()
	rr.final = map[string]bool{}
	for _, id := range sortedStringIDs(t, db.Collection(rr.target)) {
		rr.final[id] = true
	}
	if !rr.final["src"] || rr.final["old"] {
		t.Fatalf("%s after the rename holds %v, want the source's document and not the old target's", rr.target, rr.final)
	}
}

// sortedStringIDs returns the string _ids of c.
func sortedStringIDs(t *testing.T, c *mongo.Collection) []string {
	t.Helper()
	cur, err := c.Find(context.Background(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, 0, len(docs))
	for _, d := range docs {
		out = append(out, d.ID)
	}
	return out
}

// TestInsertPausedAcrossRenameDropTarget: an insert that looked its collection up before a
// renameCollection with dropTarget replaced it (held there by the failpoint
// pauseInsertBeforeLock) lands in the renamed collection that now has the name, after the
// rename in the change stream; one held across a drop lands in the collection the name
// creates again, and so does one held across a rename of its collection (MongoDB's insert
// after a rename creates the old name anew). Before, the first two went into the dropped
// collection's data, acknowledged and lost, and the third into the renamed collection.
func TestInsertPausedAcrossRenameDropTarget(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--test-commands")
	ctx := context.Background()
	cl := srv.client(t)
	admin := cl.Database("admin")
	db := cl.Database(dbName(t))
	cs, err := db.Watch(ctx, mongo.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(ctx) }()
	gate := func(mode string) int64 {
		t.Helper()
		var res struct {
			Count int64 `bson:"count"`
		}
		if err := admin.RunCommand(ctx, bson.D{{Key: "configureFailPoint", Value: "pauseInsertBeforeLock"}, {Key: "mode", Value: mode}}).Decode(&res); err != nil {
			t.Fatal(err)
		}
		return res.Count
	}
	for _, tc := range []struct {
		name, target string
		ddl          bson.D
		want         []string // the target's documents after the insert
	}{
		{"RenameDropTarget", "t1", bson.D{{Key: "renameCollection", Value: db.Name() + ".s1"}, {Key: "to", Value: db.Name() + ".t1"}, {Key: "dropTarget", Value: true}},
			[]string{"late", "src"}},
		{"Drop", "t2", bson.D{{Key: "drop", Value: "t2"}}, []string{"late"}},
		{"RenameSource", "s3", bson.D{{Key: "renameCollection", Value: db.Name() + ".s3"}, {Key: "to", Value: db.Name() + ".t3"}}, []string{"late"}},
	} {
		if _, err := db.Collection(tc.target).InsertOne(ctx, bson.D{{Key: "_id", Value: "old"}}); err != nil {
			t.Fatal(err)
		}
		if tc.name == "RenameDropTarget" {
			if _, err := db.Collection("s1").InsertOne(ctx, bson.D{{Key: "_id", Value: "src"}}); err != nil {
				t.Fatal(err)
			}
		}
		entered := gate("alwaysOn")
		inserted := make(chan error, 1)
		go func() {
			_, err := db.Collection(tc.target).InsertOne(ctx, bson.D{{Key: "_id", Value: "late"}})
			inserted <- err
		}()
		waitFor(t, 10*time.Second, "the insert to reach the failpoint", func() bool { return gate("alwaysOn") > entered })
		ddlDB := admin
		if tc.name == "Drop" {
			ddlDB = db
		}
		if err := ddlDB.RunCommand(ctx, tc.ddl).Err(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		gate("off")
		if err := <-inserted; err != nil {
			t.Fatalf("%s: the held insert: %v", tc.name, err)
		}
		if got := sortedStringIDs(t, db.Collection(tc.target)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %s holds %v, want %v", tc.name, tc.target, got, tc.want)
		}
	}
	// The held inserts' events come after the rename's and the drop's.
	if _, err := db.Collection("sentinel").InsertOne(ctx, bson.D{}); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for cs.Next(ctx) {
		var ev struct {
			Op  string                `bson:"operationType"`
			NS  struct{ Coll string } `bson:"ns"`
			Key struct {
				ID any `bson:"_id"`
			} `bson:"documentKey"`
		}
		if err := cs.Decode(&ev); err != nil {
			t.Fatal(err)
		}
		if ev.NS.Coll == "sentinel" {
			break
		}
		op := ev.Op + " " + ev.NS.Coll
		if id, ok := ev.Key.ID.(string); ok {
			op += " " + id
		}
		ops = append(ops, op)
	}
	want := []string{"insert t1 old", "insert s1 src", "rename s1", "insert t1 late", "insert t2 old", "drop t2", "insert t2 late",
		"insert s3 old", "rename s3", "insert s3 late"}
	if !slices.Equal(ops, want) {
		t.Fatalf("events %q, want %q", ops, want)
	}
}
