package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// pointReads is serverStatus' sharding.compactPointReads: the point reads of other nodes'
// shards a node sent as compact requests (_cleaveShardGet), and those it served for others.
type pointReads struct {
	Sent   int64 `bson:"sent"`
	Served int64 `bson:"served"`
}

// compactPointReads reads sharding.compactPointReads from serverStatus through c.
func compactPointReads(t *testing.T, c *mongo.Client) pointReads {
	t.Helper()
	var st struct {
		Sharding struct {
			CompactPointReads pointReads `bson:"compactPointReads"`
		} `bson:"sharding"`
	}
	if err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatalf("serverStatus: %v", err)
	}
	return st.Sharding.CompactPointReads
}

// servedByAll sums the compact point reads every node served.
func servedByAll(t *testing.T, clients []*mongo.Client) int64 {
	t.Helper()
	n := int64(0)
	for _, c := range clients {
		n += compactPointReads(t, c).Served
	}
	return n
}

// splitChunkOf splits the chunk of ns holding {_id: id} at its median, on whichever node
// owns it (a split runs on the owning node; the others answer NotImplemented 238). The
// balancer may split or move the chunk meanwhile: a conflict is tried again.
func splitChunkOf(t *testing.T, clients []*mongo.Client, ns string, id int32) {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		for _, c := range clients {
			err := c.Database("admin").RunCommand(context.Background(), bson.D{{Key: "split", Value: ns},
				{Key: "find", Value: bson.D{{Key: "_id", Value: id}}}}).Err()
			var ce mongo.CommandError
			switch {
			case err == nil:
				return
			case errors.As(err, &ce) && (ce.Code == 238 || ce.Code == 117 || ce.Code == 13388):
				continue // another node's chunk, or one changing under the split
			default:
				t.Fatalf("split %s at the chunk of %d: %v", ns, id, err)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("split %s at the chunk of %d: no node split it", ns, id)
}

// TestClusterCompactPointReadsDuringMovesAndSplits: point reads by _id through node-a, from
// many goroutines at once, of a collection sharded on hashed _id over three nodes, while its
// partitions split and move between the nodes. Two reads in three are another node's, and
// go as compact requests (_cleaveShardGet), which the owners answer without the command path;
// a request planned on a map that a split or move changed is refused by the owner as stale
// and node-a plans it again. Every read finds its document; node-a's serverStatus counts the
// compact requests it sent and the owners those they served. A point read with a collation
// takes the full request (_cleaveShardFind) and still finds its document.
func TestClusterCompactPointReadsDuringMovesAndSplits(t *testing.T) {
	t.Parallel()
	_, clients, dbn := shardedOverThree(t, "c", "_id", 3)
	ns := dbn + ".c"
	ctx := context.Background()
	coll := clients[0].Database(dbn).Collection("c")
	const total = 300
	docs := make([]any, total)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: int32(i * 10)}}
	}
	if _, err := coll.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	before, servedBefore := compactPointReads(t, clients[0]), servedByAll(t, clients)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, retried atomic.Int64
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := w; ; k += 8 {
				select {
				case <-stop:
					return
				default:
				}
				id := int32(k % total)
				var got struct{ V int32 }
				err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got)
				switch {
				case err != nil && retryableCode(err): // the router gave up retrying: the client may
					retried.Add(1)
				case err != nil:
					errs <- fmt.Errorf("findOne %d: %w", id, err)
					return
				case got.V != id*10:
					errs <- fmt.Errorf("findOne %d: v = %d, want %d", id, got.V, id*10)
					return
				default:
					reads.Add(1)
				}
			}
		}()
	}
	splitChunkOf(t, clients, ns, 7)
	moved := moveChunkTo(t, clients[1], ns, "_id", "shard-0", "shard-1")
	splitChunkOf(t, clients, ns, 150)
	moveChunkTo(t, clients[2], ns, "_id", "shard-1", "shard-2", moved)
	splitChunkOf(t, clients, ns, 299)
	moveChunkTo(t, clients[0], ns, "_id", "shard-2", "shard-0")
	// On a quiet machine the splits and moves may end before every document was read once:
	// the readers go on until they have (through the final map, as every reader must).
	waitFor(t, 30*time.Second, "a read of every document", func() bool { return reads.Load() >= total || len(errs) > 0 })
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	if reads.Load() < total {
		t.Fatalf("only %d reads succeeded during the splits and moves (%d retryable errors)", reads.Load(), retried.Load())
	}
	after, servedAfter := compactPointReads(t, clients[0]), servedByAll(t, clients)
	sent, served := after.Sent-before.Sent, servedAfter-servedBefore
	// Two reads in three are remote; some requests are refused as stale and sent again.
	if sent < reads.Load()/3 || served < reads.Load()/3 || served > sent {
		t.Fatalf("node-a sent %d compact point reads and the nodes served %d, for %d reads", sent, served, reads.Load())
	}
	t.Logf("%d reads, %d compact requests sent, %d served, %d retryable errors", reads.Load(), sent, served, retried.Load())

	// Every document, once more, through every node.
	for i, c := range clients {
		for id := range int32(total) {
			var got struct{ V int32 }
			if err := c.Database(dbn).Collection("c").FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil || got.V != id*10 {
				t.Fatalf("node %d: findOne %d = %+v, %v", i, id, got, err)
			}
		}
	}

	// A collation sends the full request: node-a sends no compact one for these reads.
	before = compactPointReads(t, clients[0])
	collated := options.FindOne().SetCollation(&options.Collation{Locale: "en", Strength: 2})
	for id := range int32(30) {
		var got struct{ V int32 }
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}, collated).Decode(&got); err != nil || got.V != id*10 {
			t.Fatalf("findOne %d with a collation = %+v, %v", id, got, err)
		}
	}
	if after := compactPointReads(t, clients[0]); after.Sent != before.Sent {
		t.Fatalf("node-a sent %d compact requests for reads with a collation, want 0", after.Sent-before.Sent)
	}
}

// TestClusterCompactPointReadStale: node-a's catalog watch is held, so it routes on its old
// map; node-b moves one of its partitions to its other shard. node-a's point reads of the
// moved partition's documents go as compact requests planned on the old map: node-b refuses
// them as stale (StaleConfig, with its revision), node-a waits for its catalog and reads
// again, and every read finds its document.
func TestClusterCompactPointReadStale(t *testing.T) {
	_, nodes := startClusterNodes(t, 2, "--shards", "2", "--test-commands")
	ctx := context.Background()
	clients := []*mongo.Client{nodes[0].client(t), nodes[1].client(t)}
	waitClusterShards(t, clients, 4)
	dbn := dbName(t)
	ns := dbn + ".users"
	shardColl(t, clients[0], ns, "_id", bson.E{Key: "numInitialChunks", Value: 8})
	waitClusterChunks(t, clients, 8, 4)
	const total = 80
	docs := make([]any, total)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "v", Value: int32(i * 10)}}
	}
	users := clients[0].Database(dbn).Collection("users")
	if _, err := users.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	before := compactPointReads(t, clients[1])
	from, chunks := moveBehindPausedWatch(t, clients, nodes, ns)
	for id := range int32(total) {
		var got struct{ V int32 }
		if err := users.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&got); err != nil || got.V != id*10 {
			t.Fatalf("findOne %d through the stale node-a = %+v, %v", id, got, err)
		}
	}
	if got := len(chunkDocsOn(t, clients[0], ns, from)); got != len(chunks)-1 {
		t.Fatalf("node-a lists %d chunks on %s after its reads, want %d: no read was refused as stale", got, from, len(chunks)-1)
	}
	if after := compactPointReads(t, clients[1]); after.Served == before.Served {
		t.Fatal("node-b served no compact point read")
	}
}
