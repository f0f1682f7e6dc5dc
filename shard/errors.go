package shard

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrInvalidMap reports a partition list that breaks a Map invariant.
	ErrInvalidMap = errors.New("shard: invalid partition map")
	// ErrUnknownPartition reports a partition id the map does not hold (any more).
	ErrUnknownPartition = errors.New("shard: unknown partition")
	// ErrBadSplitPoint reports a split point outside the open range of its partition.
	ErrBadSplitPoint = errors.New("shard: split point outside the partition")
	// ErrStaleAction reports a decision that no longer matches the map it is applied to: its
	// partition was split or moved since the view it was decided on.
	ErrStaleAction = errors.New("shard: action no longer applies")
	// ErrThrottled matches every *ThrottledError (errors.Is).
	ErrThrottled = errors.New("shard: request rate is large")
	// ErrLogicalPartitionFull matches every *LogicalPartitionFullError (errors.Is).
	ErrLogicalPartitionFull = errors.New("shard: logical partition full")
)

// ThrottledError reports an operation refused because its partition spent its share of the
// provisioned throughput. Nothing was done; the operation may be retried after RetryAfter.
// exec maps it to code 16500 (TooManyRequests) with RetryAfterMs.
type ThrottledError struct {
	PartitionID uint64
	BudgetRU    float64       // the partition's RU/s budget
	RetryAfter  time.Duration // whole milliseconds, at least 1ms
}

// Error describes the throttled partition and when to retry.
func (e *ThrottledError) Error() string {
	return fmt.Sprintf("request rate is large: partition %d exceeded its budget of %.0f RU/s, "+
		"RetryAfterMs=%d", e.PartitionID, e.BudgetRU, e.RetryAfter.Milliseconds())
}

// Is makes errors.Is(err, ErrThrottled) true.
func (e *ThrottledError) Is(target error) bool { return target == ErrThrottled }

// LogicalPartitionFullError reports a write refused because it would take one logical
// partition (all documents of one shard-key value) past LogicalPartitionMaxBytes.
type LogicalPartitionFullError struct {
	Key    string // the caller's label of the shard-key value
	Size   int64  // bytes the logical partition holds now
	Adding int64  // bytes the write would add
	Limit  int64  // LogicalPartitionMaxBytes
}

// Error names the key and the limit.
func (e *LogicalPartitionFullError) Error() string {
	return fmt.Sprintf("logical partition for shard key value %s would exceed the maximum size "+
		"of %d bytes (holds %d, adding %d)", e.Key, e.Limit, e.Size, e.Adding)
}

// Is makes errors.Is(err, ErrLogicalPartitionFull) true.
func (e *LogicalPartitionFullError) Is(target error) bool {
	return target == ErrLogicalPartitionFull
}

// CheckLogicalSize is the write path's guard for one logical partition: given the bytes the
// shard-key value holds now (the caller computes it) and the bytes the write adds, it returns
// a *LogicalPartitionFullError naming label when the result would pass
// LogicalPartitionMaxBytes. Writes that do not grow the key (adding <= 0) always pass. It does
// not allocate unless it fails.
func (p *Policy) CheckLogicalSize(label []byte, size, adding int64) error {
	limit := p.opts.LogicalPartitionMaxBytes
	if adding <= 0 || size+adding <= limit {
		return nil
	}
	return &LogicalPartitionFullError{Key: string(label), Size: size, Adding: adding, Limit: limit}
}
