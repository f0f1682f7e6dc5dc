package params

import (
	"math"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// DefaultTxnLifetime is transactionLifetimeLimitSeconds' default: an older transaction is
// aborted when it is next used, or when its documents are wanted by another.
const DefaultTxnLifetime = 60 * time.Second

// Knob is an integer server parameter settable at runtime; each server has its own
// (Knobs).
type Knob struct {
	v       atomic.Int64
	isBool  bool   // a boolean parameter: 0 or 1, reported and set as a bool
	isInt32 bool   // MongoDB stores it as an int: reported as int32, set within int32's range
	bound   int64  // the bound values are checked against
	boundOp string // "greater than" or "greater than or equal to", as MongoDB words it
	// apply, when set, is told each value set (OnSet).
	apply func(v int64)
}

// Knobs are the parameters setParameter changes: the memory bounds of blocking
// stages (MongoDB's defaults, 100 MiB each).
type Knobs struct {
	// SortMemory is internalQueryMaxBlockingSortMemoryUsageBytes: what a blocking sort holds
	// in memory (stream.Sort).
	SortMemory *Knob
	// GroupMemory is internalDocumentSourceGroupMaxMemoryBytes: what $group holds in memory
	// (agg's group spill).
	GroupMemory *Knob
	// GraphMemory is internalDocumentSourceGraphLookupMaxMemoryBytes: what one $graphLookup
	// search holds (agg's graphSearch).
	GraphMemory *Knob
	// SnapshotWindow is minSnapshotHistoryWindowInSeconds: how long the snapshots of
	// snapshot reads stay readable at their atClusterTime.
	SnapshotWindow *Knob
	// TxnLifetime is transactionLifetimeLimitSeconds: how long a transaction may stay open
	// before it is aborted (its OnSet sets the transactions' copy).
	TxnLifetime *Knob
	// TTLMonitorSleep is ttlMonitorSleepSecs: the TTL monitor's sleep between passes (its
	// OnSet sets the monitor's).
	TTLMonitorSleep *Knob
	// DiskUseByDefault is allowDiskUseByDefault (MongoDB 6.0+, true): whether a find or an
	// aggregate that does not say allowDiskUse may spill its sorts and groups.
	DiskUseByDefault *Knob
}

// NewKnobs returns the knobs at their defaults.
func NewKnobs() *Knobs {
	return &Knobs{
		SortMemory:  newKnob(100<<20, true, 0, "greater than or equal to"),
		GroupMemory: newKnob(100<<20, false, 0, "greater than"),
		GraphMemory: newKnob(100<<20, false, 0, "greater than"),
		// MongoDB's default, 300 s.
		SnapshotWindow: newKnob(300, true, 0, "greater than or equal to"),
		TxnLifetime:    newKnob(int64(DefaultTxnLifetime/time.Second), true, 1, "greater than or equal to"),
		// MongoDB's default, 60 s.
		TTLMonitorSleep:  newKnob(60, true, 1, "greater than or equal to"),
		DiskUseByDefault: newBoolKnob(true),
	}
}

// ByName returns the knob setParameter calls name, nil for none.
func (k *Knobs) ByName(name string) *Knob {
	switch name {
	case "internalDocumentSourceGroupMaxMemoryBytes":
		return k.GroupMemory
	case "internalQueryMaxBlockingSortMemoryUsageBytes":
		return k.SortMemory
	case "internalDocumentSourceGraphLookupMaxMemoryBytes":
		return k.GraphMemory
	case "minSnapshotHistoryWindowInSeconds":
		return k.SnapshotWindow
	case "transactionLifetimeLimitSeconds":
		return k.TxnLifetime
	case "ttlMonitorSleepSecs":
		return k.TTLMonitorSleep
	case "allowDiskUseByDefault":
		return k.DiskUseByDefault
	}
	return nil
}

// newKnob returns a knob holding v.
func newKnob(v int64, isInt32 bool, bound int64, boundOp string) *Knob {
	k := &Knob{isInt32: isInt32, bound: bound, boundOp: boundOp}
	k.v.Store(v)
	return k
}

// newBoolKnob returns a boolean knob holding v.
func newBoolKnob(v bool) *Knob {
	k := &Knob{isBool: true}
	if v {
		k.v.Store(1)
	}
	return k
}

// Bool returns a boolean knob's value.
func (k *Knob) Bool() bool { return k.v.Load() != 0 }

// Load returns the knob's value.
func (k *Knob) Load() int64 { return k.v.Load() }

// AppendTo appends the knob's value as MongoDB types it.
func (k *Knob) AppendTo(dst []byte, key string) []byte {
	if k.isBool {
		return bsoncore.AppendBooleanElement(dst, key, k.Bool())
	}
	if k.isInt32 {
		return bsoncore.AppendInt32Element(dst, key, int32(k.Load()))
	}
	return bsoncore.AppendInt64Element(dst, key, k.Load())
}

// Set validates v as MongoDB's IDL server parameters do (numbers coerce, then the bound)
// and stores it.
func (k *Knob) Set(name string, v bsoncore.Value) error {
	if k.isBool {
		b, ok := v.BooleanOK()
		if !ok {
			n, isNum := CoerceInt64(v) // IDL's bool parameters take numbers as their truth
			if !isNum {
				return mongoerr.New(mongoerr.BadValue, "Can't coerce value")
			}
			b = n != 0
		}
		var n int64
		if b {
			n = 1
		}
		k.v.Store(n)
		return nil
	}
	n, ok := CoerceInt64(v)
	if ok && k.isInt32 && (n < math.MinInt32 || n > math.MaxInt32) {
		ok = false
	}
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "Can't coerce value")
	}
	if n < k.bound || n == k.bound && k.boundOp == "greater than" {
		return mongoerr.New(mongoerr.BadValue, "Invalid value for parameter %s: %d is not %s %d", name, n, k.boundOp, k.bound)
	}
	k.v.Store(n)
	if k.apply != nil {
		k.apply(n)
	}
	return nil
}

// CoerceInt64 converts a number to an int64 the way BSONElement::coerce does: doubles and
// decimals truncate toward zero.
func CoerceInt64(v bsoncore.Value) (int64, bool) {
	if n, ok := bsonx.NumberAsInt64(v); ok {
		return n, true
	}
	f, ok := bsonx.NumberAsFloat64(v)
	if !ok || math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// OnSet makes every value set on k also go to f (an owner that keeps its own copy).
func (k *Knob) OnSet(f func(v int64)) { k.apply = f }
