package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// validateClean runs validate (full) on db.coll and fails t unless it is valid.
func validateClean(t *testing.T, db *mongo.Database, coll, when string) bson.Raw {
	t.Helper()
	var res bson.Raw
	err := db.RunCommand(context.Background(), bson.D{{Key: "validate", Value: coll}, {Key: "full", Value: true}}).Decode(&res)
	if err != nil {
		t.Fatalf("%s: validate %s: %v", when, coll, err)
	}
	if !res.Lookup("valid").Boolean() {
		t.Fatalf("%s: validate %s found damage: %s", when, coll, res)
	}
	return res
}

// TestValidateShape checks validate's answer on a healthy sharded collection with a
// multikey index, and its error for a missing collection.
func TestValidateShape(t *testing.T) {
	t.Parallel()
	c := sharedServer(t).client(t)
	ctx := context.Background()
	db := c.Database(dbName(t))
	coll := db.Collection("c")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "tags", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "tags", Value: bson.A{"a", "b"}}}, bson.D{{Key: "_id", Value: 2}}}); err != nil {
		t.Fatal(err)
	}
	res := validateClean(t, db, "c", "healthy")
	for _, f := range []string{"ns", "nInvalidDocuments", "nrecords", "nIndexes", "keysPerIndex", "indexDetails", "valid", "repaired", "warnings", "errors", "ok"} {
		if _, err := res.LookupErr(f); err != nil {
			t.Errorf("validate's answer lacks %s: %s", f, res)
		}
	}
	if n := res.Lookup("nrecords").AsInt64(); n != 2 {
		t.Errorf("nrecords = %d", n)
	}
	if k := res.Lookup("keysPerIndex", "tags_1").AsInt64(); k != 3 {
		t.Errorf("keysPerIndex.tags_1 = %d, want 3", k)
	}
	if !res.Lookup("indexDetails", "tags_1", "valid").Boolean() {
		t.Errorf("indexDetails: %s", res)
	}
	err := db.RunCommand(ctx, bson.D{{Key: "validate", Value: "nope"}}).Err()
	if ce := (mongo.CommandError{}); !errors.As(err, &ce) || ce.Code != 26 {
		t.Errorf("validate of a missing collection: %v, want NamespaceNotFound", err)
	}
}

// TestKillDuringIndexBuildAndDeletes kills the server with SIGKILL while an index is being
// built and clients delete documents, restarts it, and checks that validate is clean, that
// every acknowledged delete stayed deleted and that every document never deleted is there;
// three rounds on the same data.
func TestKillDuringIndexBuildAndDeletes(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	c := srv.client(t)
	shardColl(t, c, "killidx.c", "k")
	coll := c.Database("killidx").Collection("c")
	const n = 20_000
	docs := make([]any, n)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "k", Value: i % 97}, {Key: "a", Value: bson.A{i % 13, i % 7}}, {Key: "b", Value: fmt.Sprint(i)}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	deleted := map[int]bool{} // acknowledged deletes
	attempted := map[int]bool{}
	for round := range 3 {
		c := srv.client(t, options.Client().SetRetryWrites(false))
		coll := c.Database("killidx").Collection("c")
		var mu sync.Mutex
		var wg sync.WaitGroup
		wg.Go(func() { // index builds, dropped and built again
			for i := 0; ; i++ {
				name := fmt.Sprintf("ab_%d", (round*100+i)%3)
				if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: 1}},
					Options: options.Index().SetName(name)}); err != nil {
					return
				}
				if err := coll.Indexes().DropOne(ctx, name); err != nil {
					return
				}
			}
		})
		for w := range 3 {
			wg.Go(func() {
				for i := 0; ; i++ {
					id := (round*7919 + w*1009 + i*31) % n
					mu.Lock()
					attempted[id] = true
					mu.Unlock()
					if _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "k", Value: id % 97}}); err != nil {
						return
					}
					mu.Lock()
					deleted[id] = true
					mu.Unlock()
				}
			})
		}
		time.Sleep(time.Duration(300+rand.IntN(1200)) * time.Millisecond)
		srv.kill()
		wg.Wait()
		srv.restart()
		c2 := srv.client(t)
		when := fmt.Sprintf("round %d", round)
		validateClean(t, c2.Database("killidx"), "c", when)
		var st bson.Raw
		if err := c2.Database("killidx").RunCommand(ctx, bson.D{{Key: "collStats", Value: "c"}}).Decode(&st); err != nil {
			t.Fatal(err)
		}
		if builds, _ := st.Lookup("indexBuilds").Array().Values(); len(builds) > 0 {
			t.Fatalf("%s: interrupted index builds survive the restart: %s", when, st.Lookup("indexBuilds"))
		}
		cur, err := c2.Database("killidx").Collection("c").Find(ctx, bson.D{}, options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for cur.Next(ctx) {
			seen[int(cur.Current.Lookup("_id").AsInt64())] = true
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		for id := range n {
			switch {
			case deleted[id] && seen[id]:
				t.Fatalf("%s: acknowledged delete of %d undone by the kill", when, id)
			case !attempted[id] && !seen[id]:
				t.Fatalf("%s: document %d, never deleted, lost", when, id)
			}
		}
		t.Logf("%s: %d documents, %d deletes acknowledged", when, len(seen), len(deleted))
	}
}
