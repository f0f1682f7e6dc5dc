package sharding

import (
	"errors"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// MoveError maps a move's stale decision to MongoDB's answer for a chunk that changed.
func MoveError(err error) error {
	if errors.Is(err, shard.ErrStaleAction) {
		return mongoerr.Wrap(err, mongoerr.ConflictingOperationInProgress, "the partition changed during the move; retry: %v", err)
	}
	return err
}
