package integration

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// cappedIDs returns the _ids of c's documents in the order find returns them with opts.
func cappedIDs(t *testing.T, c *mongo.Collection, filter any, opts ...options.Lister[options.FindOptions]) []int32 {
	t.Helper()
	cur, err := c.Find(context.Background(), filter, opts...)
	if err != nil {
		t.Fatalf("find: %v", err)
	}
	var docs []struct {
		ID int32 `bson:"_id"`
	}
	if err := cur.All(context.Background(), &docs); err != nil {
		t.Fatalf("find: %v", err)
	}
	ids := make([]int32, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	return ids
}

// wantIDs fails unless got equals want.
func wantIDs(t *testing.T, what string, got []int32, want ...int32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: got %v, want %v", what, got, want)
		}
	}
}

// insertIDs inserts {_id: id, pad} documents one at a time, in order.
func insertIDs(t *testing.T, c *mongo.Collection, pad string, ids ...int32) {
	t.Helper()
	for _, id := range ids {
		if _, err := c.InsertOne(context.Background(), bson.D{{Key: "_id", Value: id}, {Key: "pad", Value: pad}}); err != nil {
			t.Fatalf("insert %d: %v", id, err)
		}
	}
}

func TestCappedCreateMaxDocs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCapped(true).SetSizeInBytes(4000).SetMaxDocuments(3)); err != nil {
		t.Fatalf("create: %v", err)
	}
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "c"}})
	if err != nil || len(specs) != 1 {
		t.Fatalf("listCollections: %v %v", specs, err)
	}
	// size is rounded up to a multiple of 256, as MongoDB stores it.
	if got, want := specs[0].Options.String(), `{"capped": true,"size": {"$numberInt":"4096"},"max": {"$numberInt":"3"}}`; got != want {
		t.Errorf("options = %s, want %s", got, want)
	}
	c := db.Collection("c")
	// Ids out of _id order: the natural order is the insertion order, not _id's.
	insertIDs(t, c, "x", 5, 1, 4, 2, 3)
	wantIDs(t, "natural order", cappedIDs(t, c, bson.D{}), 4, 2, 3)
	wantIDs(t, "$natural: -1", cappedIDs(t, c, bson.D{}, options.Find().SetSort(bson.D{{Key: "$natural", Value: -1}})), 3, 2, 4)
	wantIDs(t, "hint $natural: -1", cappedIDs(t, c, bson.D{}, options.Find().SetHint(bson.D{{Key: "$natural", Value: -1}})), 3, 2, 4)
	wantIDs(t, "by _id", cappedIDs(t, c, bson.D{{Key: "_id", Value: 2}}), 2)
	wantIDs(t, "evicted _id", cappedIDs(t, c, bson.D{{Key: "_id", Value: 1}}))
	// _id stays unique over the whole collection.
	_, err = c.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}})
	wantCode(t, err, 11000, "dup key: { _id: 3 }")
	// An evicted _id may come back; insertMany past the bound keeps the newest.
	if _, err := c.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 6}}, bson.D{{Key: "_id", Value: 7}}, bson.D{{Key: "_id", Value: 8}}}); err != nil {
		t.Fatalf("insertMany: %v", err)
	}
	wantIDs(t, "after insertMany", cappedIDs(t, c, bson.D{}), 6, 7, 8)
	if n, err := c.CountDocuments(ctx, bson.D{}); err != nil || n != 3 {
		t.Fatalf("count = %d, %v", n, err)
	}
	var stats bson.M
	if err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: "c"}}).Decode(&stats); err != nil {
		t.Fatalf("collStats: %v", err)
	}
	if stats["capped"] != true || stats["max"] != int32(3) || stats["maxSize"] != int32(4096) || stats["count"] != int32(3) {
		t.Errorf("collStats = %v", stats)
	}
	res, err := runCmd(t, db, bson.D{{Key: "validate", Value: "c"}})
	if err != nil || res["valid"] != true {
		t.Errorf("validate = %v, %v", res, err)
	}
}

func TestCappedSizeBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCapped(true).SetSizeInBytes(1000)); err != nil {
		t.Fatalf("create: %v", err)
	}
	c := db.Collection("c")
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "pad", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("p", 200) // about 225 bytes a document: 1024 bytes hold 4
	for i := int32(1); i <= 10; i++ {
		insertIDs(t, c, pad, i)
		var stats bson.M
		if err := db.RunCommand(ctx, bson.D{{Key: "collStats", Value: "c"}}).Decode(&stats); err != nil {
			t.Fatal(err)
		}
		if size := stats["size"].(int32); size > 1024 {
			t.Fatalf("after %d inserts the size is %d, above the bound 1024", i, size)
		}
	}
	wantIDs(t, "newest kept", cappedIDs(t, c, bson.D{}), 7, 8, 9, 10)
	// The evicted documents' index entries went with them.
	wantIDs(t, "through the pad index", cappedIDs(t, c, bson.D{{Key: "pad", Value: pad}}, options.Find().SetHint("pad_1")), 7, 8, 9, 10)
	res, err := runCmd(t, db, bson.D{{Key: "validate", Value: "c"}, {Key: "full", Value: true}})
	if err != nil || res["valid"] != true {
		t.Errorf("validate = %v, %v", res, err)
	}
	_, err = c.InsertOne(ctx, bson.D{{Key: "big", Value: strings.Repeat("b", 2000)}})
	wantCode(t, err, 10334, "object to insert exceeds cappedMaxSize")
	// Updates (growing included, allowed since MongoDB 6.0) and deletes keep the order.
	if _, err := c.UpdateOne(ctx, bson.D{{Key: "_id", Value: 8}}, bson.D{{Key: "$set", Value: bson.D{{Key: "more", Value: "x"}}}}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if _, err := c.DeleteOne(ctx, bson.D{{Key: "_id", Value: 9}}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	wantIDs(t, "after update and delete", cappedIDs(t, c, bson.D{}), 7, 8, 10)
	if n, _ := c.CountDocuments(ctx, bson.D{{Key: "more", Value: "x"}}); n != 1 {
		t.Fatalf("updated documents: %d", n)
	}
}

func TestCappedCreateErrors(t *testing.T) {
	t.Parallel()
	db := sharedServer(t).client(t).Database(dbName(t))
	cases := []struct {
		name string
		cmd  bson.D
		code int32
		msg  string
	}{
		{"NoSize", bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}}, 72, "the 'size' field is required when 'capped' is true"},
		{"SizeNotCapped", bson.D{{Key: "create", Value: "c"}, {Key: "size", Value: 1000}}, 72, "the 'capped' field needs to be true when either the 'size' or 'max' fields are present"},
		{"MaxNotCapped", bson.D{{Key: "create", Value: "c"}, {Key: "max", Value: 10}}, 72, "the 'capped' field needs to be true when either the 'size' or 'max' fields are present"},
		{"SizeString", bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: "big"}}, 14, "BSON field 'create.size' is the wrong type 'string'"},
		{"SizeZero", bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: 0}}, 51024, "BSON field 'create.size' value must be >= 1, actual value '0'"},
		{"MaxTooLarge", bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: 1000}, {Key: "max", Value: int64(1) << 31}}, 51024, "BSON field 'create.max' value must be < 2147483648"},
		{"Timeseries", bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: 1000}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}}, 72, "'timeseries' is not allowed with 'capped'"},
		{"Sharded", bson.D{{Key: "create", Value: "c"}, {Key: "capped", Value: true}, {Key: "size", Value: 1000}, {Key: "shardKey", Value: bson.D{{Key: "a", Value: "hashed"}}}}, 72, "can't shard a capped collection"},
	}
	for _, tc := range cases {
		_, err := runCmd(t, db, tc.cmd)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, tc.msg) })
	}
	if _, err := runCmd(t, db, bson.D{{Key: "create", Value: "capped"}, {Key: "capped", Value: true}, {Key: "size", Value: 1000}}); err != nil {
		t.Fatal(err)
	}
	_, err := runCmd(t, db.Client().Database("admin"), bson.D{{Key: "shardCollection", Value: dbName(t) + ".capped"}, {Key: "key", Value: bson.D{{Key: "a", Value: "hashed"}}}})
	wantCode(t, err, 72, "can't shard a capped collection")
}

// TestCappedKill kills the server with SIGKILL while clients insert into a capped collection,
// restarts it, and checks that no acknowledged insert that the cap did not evict is lost, that
// the cap held, and that it still holds for the inserts after the restart.
func TestCappedKill(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2")
	ctx := context.Background()
	const writers, maxDocs = 4, 50
	c := srv.client(t, options.Client().SetMaxPoolSize(writers+2).SetRetryWrites(false))
	db := c.Database("durable")
	if err := db.CreateCollection(ctx, "log", options.CreateCollection().SetCapped(true).SetSizeInBytes(1<<20).SetMaxDocuments(maxDocs)); err != nil {
		t.Fatal(err)
	}
	coll := db.Collection("log")
	var mu sync.Mutex
	lastAcked := make([]int32, writers) // per writer, its last acknowledged sequence number
	var lastID string                   // the last insert acknowledged, all writers together
	acks := 0
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := int32(1); ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				doc := bson.D{{Key: "_id", Value: id}, {Key: "w", Value: w}, {Key: "i", Value: i}, {Key: "pad", Value: strings.Repeat("p", 100)}}
				if _, err := coll.InsertOne(ctx, doc); err != nil {
					return // the server is gone
				}
				mu.Lock()
				lastAcked[w], lastID = i, id
				acks++
				mu.Unlock()
			}
		}(w)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		n := acks
		mu.Unlock()
		if n >= 300 || time.Now().After(deadline) {
			break
		}
	}
	srv.kill()
	close(stop)
	wg.Wait()
	if acks < maxDocs {
		t.Fatalf("only %d inserts acknowledged before the kill", acks)
	}

	srv.restart()
	coll = srv.client(t).Database("durable").Collection("log")
	validateClean(t, coll.Database(), "log", "after kill -9")
	cur, err := coll.Find(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var docs []struct {
		ID string `bson:"_id"`
		W  int    `bson:"w"`
		I  int32  `bson:"i"`
	}
	if err := cur.All(ctx, &docs); err != nil {
		t.Fatal(err)
	}
	if len(docs) != maxDocs {
		t.Fatalf("%d documents after restart, want the cap, %d", len(docs), maxDocs)
	}
	// In natural order each writer's documents are a run of consecutive inserts, which ends
	// at or after its last acknowledged one unless the cap evicted them all.
	last := make([]int32, writers)
	for _, d := range docs {
		if last[d.W] != 0 && d.I != last[d.W]+1 {
			t.Fatalf("writer %d: insert %d follows %d in natural order", d.W, d.I, last[d.W])
		}
		last[d.W] = d.I
	}
	for w := range writers {
		if last[w] != 0 && last[w] < lastAcked[w] {
			t.Errorf("writer %d: acknowledged insert %d lost (the newest present is %d)", w, lastAcked[w], last[w])
		}
	}
	found := false
	for _, d := range docs {
		found = found || d.ID == lastID
	}
	if !found {
		t.Errorf("the last acknowledged insert %s is missing after kill -9", lastID)
	}
	// The cap holds after the restart, and record ids go on growing.
	var more []any
	for i := range 2 * maxDocs {
		more = append(more, bson.D{{Key: "_id", Value: fmt.Sprintf("after-%03d", i)}})
	}
	if _, err := coll.InsertMany(ctx, more); err != nil {
		t.Fatal(err)
	}
	n, err := coll.CountDocuments(ctx, bson.D{})
	if err != nil || n != maxDocs {
		t.Fatalf("count after more inserts = %d, %v", n, err)
	}
	first, err := coll.FindOne(ctx, bson.D{}).Raw()
	if err != nil || first.Lookup("_id").StringValue() != fmt.Sprintf("after-%03d", maxDocs) {
		t.Fatalf("oldest document after more inserts = %v, %v", first, err)
	}
	validateClean(t, coll.Database(), "log", "after more inserts")
	t.Logf("%d acknowledged inserts; after kill -9 the newest %d are there, in order", acks, maxDocs)
}

func TestCappedConvertAndClone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := sharedServer(t).client(t).Database(dbName(t))
	c := db.Collection("c")
	pad := strings.Repeat("p", 100) // 128 bytes a document
	for i := int32(1); i <= 10; i++ {
		insertIDs(t, c, pad, i)
	}
	if _, err := c.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "pad", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	res, err := runCmd(t, db, bson.D{{Key: "cloneCollectionAsCapped", Value: "c"}, {Key: "toCollection", Value: "k"}, {Key: "size", Value: 400}})
	if err != nil || res["ok"] != 1.0 {
		t.Fatalf("cloneCollectionAsCapped = %v, %v", res, err)
	}
	wantIDs(t, "clone: the newest that fit 400 bytes", cappedIDs(t, db.Collection("k"), bson.D{}), 8, 9, 10)
	wantIDs(t, "source untouched", cappedIDs(t, c, bson.D{}), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
	insertIDs(t, db.Collection("k"), pad, 11)
	wantIDs(t, "clone stays capped", cappedIDs(t, db.Collection("k"), bson.D{}), 9, 10, 11)

	if _, err := runCmd(t, db, bson.D{{Key: "convertToCapped", Value: "c"}, {Key: "size", Value: 700}}); err != nil {
		t.Fatalf("convertToCapped: %v", err)
	}
	wantIDs(t, "converted", cappedIDs(t, c, bson.D{}), 6, 7, 8, 9, 10)
	specs, err := db.ListCollectionSpecifications(ctx, bson.D{{Key: "name", Value: "c"}})
	if err != nil || len(specs) != 1 || specs[0].Options.String() != `{"capped": true,"size": {"$numberInt":"700"}}` {
		t.Fatalf("listCollections = %v, %v", specs, err)
	}
	names, err := c.Indexes().ListSpecifications(ctx)
	if err != nil || len(names) != 1 || names[0].Name != "_id_" {
		t.Fatalf("indexes after convertToCapped = %v, %v (only _id is kept)", names, err)
	}
	insertIDs(t, c, pad, 11, 12)
	wantIDs(t, "converted stays capped", cappedIDs(t, c, bson.D{}), 8, 9, 10, 11, 12)
	res, err = runCmd(t, db, bson.D{{Key: "validate", Value: "c"}, {Key: "full", Value: true}})
	if err != nil || res["valid"] != true {
		t.Errorf("validate = %v, %v", res, err)
	}

	cases := []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"ConvertMissing", bson.D{{Key: "convertToCapped", Value: "nope"}, {Key: "size", Value: 1000}}, 26},
		{"ConvertNoSize", bson.D{{Key: "convertToCapped", Value: "c"}}, 40414},
		{"CloneMissing", bson.D{{Key: "cloneCollectionAsCapped", Value: "nope"}, {Key: "toCollection", Value: "x"}, {Key: "size", Value: 1000}}, 26},
		{"CloneTargetExists", bson.D{{Key: "cloneCollectionAsCapped", Value: "c"}, {Key: "toCollection", Value: "k"}, {Key: "size", Value: 1000}}, 48},
	}
	for _, tc := range cases {
		_, err := runCmd(t, db, tc.cmd)
		t.Run(tc.name, func(t *testing.T) { wantCode(t, err, tc.code, "") })
	}
}

func TestCappedRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := sharedServer(t).client(t)
	db := cl.Database(dbName(t))
	if err := db.CreateCollection(ctx, "c", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096)); err != nil {
		t.Fatal(err)
	}
	c := db.Collection("c")
	insertIDs(t, c, "x", 1)
	// Writes in transactions are not allowed on capped collections; reads are.
	sess, err := cl.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	sctx := mongo.NewSessionContext(ctx, sess)
	if n, err := c.CountDocuments(sctx, bson.D{}); err != nil || n != 1 {
		t.Fatalf("count in a transaction = %d, %v", n, err)
	}
	_, err = c.Find(sctx, bson.D{}, options.Find().SetCursorType(options.Tailable))
	wantCode(t, err, 72, "It is illegal to open a tailable cursor in a transaction")
	_ = sess.AbortTransaction(ctx)
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	_, err = c.InsertOne(sctx, bson.D{{Key: "_id", Value: 2}})
	wantCode(t, err, 263, "is a capped collection. Writes in transactions are not allowed on capped collections.")
	_ = sess.AbortTransaction(ctx)
	wantIDs(t, "after the refused transaction", cappedIDs(t, c, bson.D{}), 1)
	// $out cannot replace a capped collection.
	if _, err := db.Collection("src").InsertOne(ctx, bson.D{{Key: "_id", Value: 7}}); err != nil {
		t.Fatal(err)
	}
	_, err = db.Collection("src").Aggregate(ctx, mongo.Pipeline{{{Key: "$out", Value: "c"}}})
	wantCode(t, err, 17152, "is capped so it can't be used for $out")
	wantIDs(t, "after the refused $out", cappedIDs(t, c, bson.D{}), 1)
}
