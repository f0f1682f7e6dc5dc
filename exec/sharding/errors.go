package sharding

import (
	"errors"

	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// ErrShutdown is the failure of a move that the node's shutdown stopped (Manager.Stop).
var ErrShutdown = errors.New("the node is shutting down")

// MoveError maps a move's stale decision to MongoDB's answer for a chunk that changed, and a
// move stopped by the node's shutdown to InterruptedAtShutdown.
func MoveError(err error) error {
	switch {
	case errors.Is(err, shard.ErrStaleAction):
		return mongoerr.Wrap(err, mongoerr.ConflictingOperationInProgress, "the partition changed during the move; retry: %v", err)
	case errors.Is(err, ErrShutdown):
		return mongoerr.Wrap(err, mongoerr.InterruptedAtShutdown, "the move was interrupted by the node's shutdown: %v", err)
	}
	return err
}

// SplitError turns the manager's refusals of a split by hand into MongoDB errors.
func SplitError(err error) error {
	if errors.Is(err, ErrIndivisible) {
		return mongoerr.Wrap(err, mongoerr.CannotSplit, "Unable to find median in chunk because chunk is indivisible.")
	}
	return MoveError(err)
}
