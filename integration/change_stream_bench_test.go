package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// BenchmarkChangeStreamLatency measures how long after a write is acknowledged its event
// reaches a stream waiting in a getMore (the Go driver's Watch), on one shard and on two:
// one writer inserts, one at a time, while the stream reads. It reports the p50 and p99 of
// the delay (negative when the event arrived before the acknowledgement did):
//
//	go test ./integration -run '^$' -bench ChangeStreamLatency -benchtime 2000x
func BenchmarkChangeStreamLatency(b *testing.B) {
	for _, shards := range []string{"1", "2"} {
		b.Run("shards="+shards, func(b *testing.B) {
			srv := startServer(b, "--shards", shards, "--log-level", "warn")
			ctx := context.Background()
			coll := srv.client(b).Database("csbench").Collection("c")
			cs, err := srv.client(b).Database("csbench").Collection("c").Watch(ctx, mongo.Pipeline{})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = cs.Close(ctx) }()
			acked := make([]time.Time, b.N)
			arrived := make([]time.Time, b.N)
			done := make(chan error, 1)
			go func() {
				for i := range b.N {
					if !cs.Next(ctx) {
						done <- cs.Err()
						return
					}
					arrived[i] = time.Now()
				}
				done <- nil
			}()
			b.ResetTimer()
			for i := range b.N {
				if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}}); err != nil {
					b.Fatal(err)
				}
				acked[i] = time.Now()
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			lat := make([]float64, b.N)
			for i := range lat {
				lat[i] = float64(arrived[i].Sub(acked[i]).Microseconds())
			}
			slices.Sort(lat)
			b.ReportMetric(lat[len(lat)/2], "p50-µs")
			b.ReportMetric(lat[len(lat)*99/100], "p99-µs")
		})
	}
}
