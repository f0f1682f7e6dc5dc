package exec

import (
	"context"
	"time"

	"github.com/cleavedb/cleave/exec/args"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ttlMonitorCommand is the test-only command {cleaveTTLMonitor: 1, intervalMS: n}: it sets
// the monitor's interval (when given), runs a pass now and waits for it, and answers the
// number of passes done.
func (e *Executor) ttlMonitorCommand(ctx context.Context, r *request) error {
	const cmd = "cleaveTTLMonitor"
	var interval time.Duration
	err := args.ForEach(cmd, r.body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "intervalMS" {
			return false, nil
		}
		n, err := args.Int64(cmd, key, v)
		if err == nil && n > 0 {
			interval = time.Duration(n) * time.Millisecond
		}
		return true, err
	})
	if err != nil {
		return err
	}
	r.out = bsoncore.AppendInt64Element(r.out, "passes", e.ddl.TTLPassNow(ctx, interval))
	return nil
}
