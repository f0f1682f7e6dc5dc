package colls

import (
	"context"
	"time"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ttlMonitorCommand is the test-only command {cleaveTTLMonitor: 1, intervalMS: n}: it sets
// the monitor's interval (when given), runs a pass now and waits for it, and answers the
// number of passes done.
func (h *Handlers) ttlMonitorCommand(ctx context.Context, r *command.Request) error {
	const cmd = "cleaveTTLMonitor"
	var interval time.Duration
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
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
	r.Out = bsoncore.AppendInt64Element(r.Out, "passes", h.DDL.TTLPassNow(ctx, interval))
	return nil
}
