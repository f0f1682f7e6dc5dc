package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// sharedThroughput returns partitionStats' throughput of db.coll (its share of the database's)
// and its partitions' budgets.
func sharedThroughput(t *testing.T, db *mongo.Database, coll string) (float64, []float64) {
	t.Helper()
	st := partitionStats(t, db, coll)
	var budgets []float64
	for _, p := range st["partitions"].(bson.A) {
		budgets = append(budgets, shardM(p)["budgetRUPerSec"].(float64))
	}
	return float64(st["throughput"].(int64)), budgets
}

// TestRedistributeSharedDatabase: a database of 800 RU/s shared by two collections of two
// partitions each, with --redistribute-throughput. At rest each collection gets 400 RU/s, 200
// per partition. A load on one (over many keys) that its 400 RU/s cannot serve makes the
// partition manager move the database's throughput to it: its share grows past 440 RU/s,
// the idle one keeps at least its floor (100 RU/s a partition), and the two shares, and all
// four budgets, sum to the database's 800. GetCollection shows the Demand policy.
func TestRedistributeSharedDatabase(t *testing.T) {
	t.Parallel()
	s := startServer(t, "--redistribute-throughput", "--partition-check-interval", "200ms")
	c := s.client(t)
	ctx := context.Background()
	name := dbName(t)
	db := c.Database(name)
	if _, err := runCmd(t, db, bson.D{{Key: "customAction", Value: "CreateDatabase"}, {Key: "offerThroughput", Value: 800}}); err != nil {
		t.Fatal(err)
	}
	for _, coll := range []string{"hot", "cold"} {
		shardColl(t, c, name+"."+coll, "k", bson.E{Key: "numInitialChunks", Value: 2})
	}
	for _, coll := range []string{"hot", "cold"} {
		if share, budgets := sharedThroughput(t, db, coll); share != 400 || len(budgets) != 2 || budgets[0] != 200 {
			t.Fatalf("%s at rest: %v RU/s, budgets %v; want 400, 200 each", coll, share, budgets)
		}
	}
	var hot pushResult
	stop := make(chan struct{})
	done := make(chan struct{}, 4)
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_, err := db.Collection("hot").InsertOne(ctx, bson.D{{Key: "_id", Value: fmt.Sprintf("%d-%d", w, i)}, {Key: "k", Value: i}})
				if err == nil {
					hot.ok.Add(1)
				} else {
					hot.throttled.Add(1)
				}
			}
		}()
	}
	var hotShare float64
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if hotShare, _ = sharedThroughput(t, db, "hot"); hotShare > 440 {
			break
		}
	}
	close(stop)
	for range 4 {
		<-done
	}
	hotShare, hotBudgets := sharedThroughput(t, db, "hot")
	coldShare, coldBudgets := sharedThroughput(t, db, "cold")
	t.Logf("hot %v RU/s %v, cold %v RU/s %v; %d inserts served, %d refused", hotShare, hotBudgets, coldShare, coldBudgets, hot.ok.Load(), hot.throttled.Load())
	if hotShare <= 440 {
		t.Fatalf("the hot collection's share stayed at %v RU/s", hotShare)
	}
	if coldShare < 200 || coldShare >= 400 {
		t.Errorf("the idle collection's share %v RU/s: want below 400 and at least its floor, 200", coldShare)
	}
	if sum := hotShare + coldShare; sum < 799 || sum > 801 { // partitionStats rounds each down
		t.Errorf("the shares sum to %v, want the database's 800", sum)
	}
	var sum float64
	for _, b := range append(hotBudgets, coldBudgets...) {
		sum += b
	}
	if sum < 799.9 || sum > 800.1 {
		t.Errorf("the budgets sum to %v, want 800", sum)
	}
	got, err := runCmd(t, db, bson.D{{Key: "customAction", Value: "GetCollection"}, {Key: "collection", Value: "hot"}})
	if err != nil || got["throughputPolicy"] != "Demand" {
		t.Errorf("GetCollection: %v, %v; want the Demand policy", got, err)
	}
}
