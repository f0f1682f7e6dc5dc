package catalog

import (
	"errors"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Throttled turns a budget's refusal (*shard.ThrottledError) into Cosmos DB's answer: code
// 16500 TooManyRequests, whose message carries RetryAfterMs=<n>, the hint drivers' and
// applications' retry policies parse. Other errors are returned as they are.
func Throttled(ci *Coll, err error) error {
	var te *shard.ThrottledError
	if !errors.As(err, &te) {
		return err
	}
	return mongoerr.Wrap(err, mongoerr.TooManyRequests,
		"Request rate is large. More Request Units may be needed, so no changes were made. "+
			"Please retry this request later. RetryAfterMs=%d, Details='partition %d of %s used "+
			"its share of the provisioned throughput, %.0f RU/s'",
		te.RetryAfter.Milliseconds(), te.PartitionID, ci.NS(), te.BudgetRU)
}
