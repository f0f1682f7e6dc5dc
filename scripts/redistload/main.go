// Command redistload measures throughput that follows demand (issue 40's load test): a
// collection of 4 partitions provisioned at T RU/s, an open-loop load of T RU/s of $inc
// updates over many keys, a share -hot of them on the keys of one partition. It prints, per
// window, the RU/s served and the share of requests throttled (16500), and the partitions'
// budgets from partitionStats. The collection starts with 4 partitions (numInitialChunks) and
// T below the load-split threshold (0.8 of --max-partition-ru), so that only the budgets can
// change. Run it once against a server with --redistribute-throughput=false and once with
// =true.
//
//	go run ./scripts/redistload -uri mongodb://127.0.0.1:27300 -duration 60s
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

func main() {
	uri := flag.String("uri", "mongodb://127.0.0.1:27017", "server")
	throughput := flag.Int("t", 4000, "provisioned RU/s of the collection")
	hot := flag.Float64("hot", 0.6, "share of the requests on one partition's keys")
	dur := flag.Duration("duration", 60*time.Second, "how long to load")
	window := flag.Duration("window", 5*time.Second, "reporting window")
	flag.Parse()
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI(*uri).SetMaxPoolSize(64))
	if err != nil {
		log.Fatal(err)
	}
	db := c.Database("redistload")
	_ = db.Drop(ctx)
	must(c.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: "redistload.c"},
		{Key: "key", Value: bson.D{{Key: "k", Value: "hashed"}}}, {Key: "numInitialChunks", Value: 4}}).Err())
	must(db.RunCommand(ctx, bson.D{{Key: "customAction", Value: "UpdateCollection"}, {Key: "collection", Value: "c"},
		{Key: "offerThroughput", Value: *throughput}}).Err())
	hotKeys, coldKeys, hotID := keysByPartition(ctx, db)
	ru := chargeOf(ctx, db, hotKeys[0])
	rate := float64(*throughput) / ru
	_, _ = fmt.Fprintf(os.Stdout, "hot partition %d: %d keys, %d other keys; %.2f RU per update, offering %.0f updates/s (%d RU/s), %.0f%% on the hot partition\n",
		hotID, len(hotKeys), len(coldKeys), ru, rate, *throughput, *hot*100)
	var ok, throttled atomic.Int64
	jobs := make(chan string, 4096)
	var wg sync.WaitGroup
	for range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range jobs {
				_, err := db.Collection("c").UpdateOne(ctx, bson.D{{Key: "k", Value: k}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				var ce mongo.ServerError
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &ce) && ce.HasErrorCode(16500):
					throttled.Add(1)
				default:
					log.Printf("update: %v", err)
				}
			}
		}()
	}
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	sent, lastOK, lastThr, lastReport := 0.0, int64(0), int64(0), start
	for now := range tick.C {
		for due := now.Sub(start).Seconds() * rate; sent < due; sent++ {
			keys := coldKeys
			if rand.Float64() < *hot {
				keys = hotKeys
			}
			select {
			case jobs <- keys[rand.IntN(len(keys))]:
			default: // the workers are saturated: the offered load is not met
			}
		}
		if now.Sub(lastReport) >= *window {
			o, t := ok.Load(), throttled.Load()
			secs := now.Sub(lastReport).Seconds()
			share := 0.0
			if n := (o - lastOK) + (t - lastThr); n > 0 {
				share = float64(t-lastThr) / float64(n) * 100
			}
			_, _ = fmt.Fprintf(os.Stdout, "t=%3.0fs served %5.0f RU/s (%3.0f%% of T), throttled %5.1f%% of requests; budgets %v\n",
				now.Sub(start).Seconds(), float64(o-lastOK)*ru/secs, float64(o-lastOK)*ru/secs/float64(*throughput)*100, share, budgets(ctx, db))
			lastOK, lastThr, lastReport = o, t, now
		}
		if now.Sub(start) >= *dur {
			break
		}
	}
	tick.Stop()
	close(jobs)
	wg.Wait()
}

// keysByPartition inserts 400 keys and sorts them by the partition explain says holds them:
// those of the first key's partition, the others, and that partition's id.
func keysByPartition(ctx context.Context, db *mongo.Database) (hot, cold []string, hotID int64) {
	hotID = -1
	for i := range 400 {
		k := fmt.Sprintf("key-%04d", i)
		if _, err := db.Collection("c").InsertOne(ctx, bson.D{{Key: "k", Value: k}, {Key: "n", Value: 0}}); err != nil {
			log.Fatal(err)
		}
		var e struct {
			QueryPlanner struct {
				WinningPlan struct {
					Shards []struct {
						Partitions []struct {
							ID int64 `bson:"id"`
						} `bson:"partitions"`
					} `bson:"shards"`
				} `bson:"winningPlan"`
			} `bson:"queryPlanner"`
		}
		must(db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "k", Value: k}}}}},
			{Key: "verbosity", Value: "queryPlanner"}}).Decode(&e))
		id := e.QueryPlanner.WinningPlan.Shards[0].Partitions[0].ID
		if hotID < 0 {
			hotID = id
		}
		if id == hotID {
			hot = append(hot, k)
		} else {
			cold = append(cold, k)
		}
	}
	return hot, cold, hotID
}

// chargeOf returns the request charge of one update of key k.
func chargeOf(ctx context.Context, db *mongo.Database, k string) float64 {
	conn := db.Client()
	sess, err := conn.StartSession()
	if err != nil {
		log.Fatal(err)
	}
	defer sess.EndSession(ctx)
	var charge float64
	err = mongo.WithSession(ctx, sess, func(ctx context.Context) error {
		if _, err := db.Collection("c").UpdateOne(ctx, bson.D{{Key: "k", Value: k}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
			return err
		}
		var st struct {
			RequestCharge float64 `bson:"RequestCharge"`
		}
		err := db.RunCommand(ctx, bson.D{{Key: "getLastRequestStatistics", Value: 1}}).Decode(&st)
		charge = st.RequestCharge
		return err
	})
	must(err)
	return charge
}

// budgets returns the partitions' budgets in RU/s, rounded.
func budgets(ctx context.Context, db *mongo.Database) []int {
	var st struct {
		Partitions []struct {
			Budget float64 `bson:"budgetRUPerSec"`
		} `bson:"partitions"`
	}
	must(db.RunCommand(ctx, bson.D{{Key: "partitionStats", Value: "c"}}).Decode(&st))
	out := make([]int, len(st.Partitions))
	for i, p := range st.Partitions {
		out[i] = int(p.Budget + 0.5)
	}
	return out
}

func must(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
