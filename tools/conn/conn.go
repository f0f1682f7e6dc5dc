// Package conn opens the client tools' connection to a server (cleave dump, load, export and
// import): the Go driver on the --uri given, checked with a ping so that a wrong address fails
// at once rather than at the first read.
package conn

import (
	"context"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// Connect opens a client on uri, checking that the server answers.
func Connect(ctx context.Context, uri string) (*mongo.Client, error) {
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return nil, fmt.Errorf("--uri %s: %w", uri, err)
	}
	if err := c.Ping(ctx, nil); err != nil {
		_ = c.Disconnect(ctx)
		return nil, fmt.Errorf("cannot reach %s: %w", uri, err)
	}
	return c, nil
}
