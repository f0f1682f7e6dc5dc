package cmd

import (
	"context"
	"math"
	"sort"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// parameter is one server parameter getParameter can report.
type parameter struct {
	name   string
	append func(e *Server, dst []byte, key string) []byte
}

// knob is an integer server parameter settable at runtime; each executor has its own
// (serverKnobs).
type knob struct {
	v       atomic.Int64
	isInt32 bool   // MongoDB stores it as an int: reported as int32, set within int32's range
	bound   int64  // the bound values are checked against
	boundOp string // "greater than" or "greater than or equal to", as MongoDB words it
	// apply, when set, is told each value set (a knob whose owner keeps its own copy).
	apply func(v int64)
}

// serverKnobs are the parameters setParameter changes: the memory bounds of blocking
// stages (MongoDB's defaults, 100 MiB each).
type serverKnobs struct {
	// SortMemory is internalQueryMaxBlockingSortMemoryUsageBytes: what a blocking sort holds
	// in memory (stream.Sort).
	SortMemory *knob
	// GroupMemory is internalDocumentSourceGroupMaxMemoryBytes: what $group holds in memory
	// (agg's group spill).
	GroupMemory *knob
	// graphMemory is internalDocumentSourceGraphLookupMaxMemoryBytes: what one $graphLookup
	// search holds (agg's graphSearch).
	graphMemory *knob
	// snapshotWindow is minSnapshotHistoryWindowInSeconds: how long the snapshots of
	// snapshot reads stay readable at their atClusterTime (snapshot_read.go).
	snapshotWindow *knob
	// txnLifetime is transactionLifetimeLimitSeconds: how long a transaction may stay open
	// before it is aborted (txn.go; its apply sets the registry's copy).
	txnLifetime *knob
}

// newServerKnobs returns the knobs at their defaults.
func newServerKnobs() serverKnobs {
	return serverKnobs{
		SortMemory:  newKnob(100<<20, true, 0, "greater than or equal to"),
		GroupMemory: newKnob(100<<20, false, 0, "greater than"),
		graphMemory: newKnob(100<<20, false, 0, "greater than"),
		// MongoDB's default, 300 s.
		snapshotWindow: newKnob(300, true, 0, "greater than or equal to"),
		txnLifetime:    newKnob(int64(txnLifetime/time.Second), true, 1, "greater than or equal to"),
	}
}

// byName returns the knob setParameter calls name, nil for none.
func (k *serverKnobs) byName(name string) *knob {
	switch name {
	case "internalDocumentSourceGroupMaxMemoryBytes":
		return k.GroupMemory
	case "internalQueryMaxBlockingSortMemoryUsageBytes":
		return k.SortMemory
	case "internalDocumentSourceGraphLookupMaxMemoryBytes":
		return k.graphMemory
	case "minSnapshotHistoryWindowInSeconds":
		return k.snapshotWindow
	case "transactionLifetimeLimitSeconds":
		return k.txnLifetime
	}
	return nil
}

// newKnob returns a knob holding v.
func newKnob(v int64, isInt32 bool, bound int64, boundOp string) *knob {
	k := &knob{isInt32: isInt32, bound: bound, boundOp: boundOp}
	k.v.Store(v)
	return k
}

// Load returns the knob's value.
func (k *knob) Load() int64 { return k.v.Load() }

// appendTo appends the knob's value as MongoDB types it.
func (k *knob) appendTo(dst []byte, key string) []byte {
	if k.isInt32 {
		return bsoncore.AppendInt32Element(dst, key, int32(k.Load()))
	}
	return bsoncore.AppendInt64Element(dst, key, k.Load())
}

// set validates v as MongoDB's IDL server parameters do (numbers coerce, then the bound)
// and stores it.
func (k *knob) set(name string, v bsoncore.Value) error {
	n, ok := coerceInt64(v)
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

// coerceInt64 converts a number to an int64 the way BSONElement::coerce does: doubles and
// decimals truncate toward zero.
func coerceInt64(v bsoncore.Value) (int64, bool) {
	if n, ok := bsonx.NumberAsInt64(v); ok {
		return n, true
	}
	f, ok := bsonx.NumberAsFloat64(v)
	if !ok || math.IsNaN(f) || f >= math.MaxInt64 || f < math.MinInt64 {
		return 0, false
	}
	return int64(f), true
}

// parameters are the server parameters cleave reports, sorted by name as getParameter: "*"
// lists them. Values are cleave's effective settings.
var parameters = []parameter{
	{"authenticationMechanisms", func(_ *Server, dst []byte, key string) []byte {
		return bsonx.AppendStringArray(dst, key, []string{"SCRAM-SHA-1", "SCRAM-SHA-256"})
	}},
	{"cursorTimeoutMillis", int64Param(600_000)},
	{"enableTestCommands", func(e *Server, dst []byte, key string) []byte {
		return bsoncore.AppendBooleanElement(dst, key, e.Opts.TestCommands)
	}},
	{"featureCompatibilityVersion", func(_ *Server, dst []byte, key string) []byte {
		idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
		dst = bsoncore.AppendStringElement(dst, "version", fcv)
		dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
		return dst
	}},
	{"internalDocumentSourceGroupMaxMemoryBytes", func(e *Server, dst []byte, key string) []byte {
		return e.Knobs.GroupMemory.appendTo(dst, key)
	}},
	{"internalDocumentSourceGraphLookupMaxMemoryBytes", func(e *Server, dst []byte, key string) []byte {
		return e.Knobs.graphMemory.appendTo(dst, key)
	}},
	{"internalQueryMaxBlockingSortMemoryUsageBytes", func(e *Server, dst []byte, key string) []byte {
		return e.Knobs.SortMemory.appendTo(dst, key)
	}},
	{"localLogicalSessionTimeoutMinutes", func(e *Server, dst []byte, key string) []byte {
		return bsoncore.AppendInt32Element(dst, key, e.sessionTimeoutMinutes())
	}},
	{"logLevel", func(_ *Server, dst []byte, key string) []byte { return bsoncore.AppendInt32Element(dst, key, 0) }},
	{"maxBSONDepth", func(_ *Server, dst []byte, key string) []byte { return bsoncore.AppendInt32Element(dst, key, 200) }},
	{"minSnapshotHistoryWindowInSeconds", func(e *Server, dst []byte, key string) []byte {
		return e.Knobs.snapshotWindow.appendTo(dst, key)
	}},
	{"quiet", func(_ *Server, dst []byte, key string) []byte {
		return bsoncore.AppendBooleanElement(dst, key, false)
	}},
	{"requireApiVersion", func(_ *Server, dst []byte, key string) []byte {
		return bsoncore.AppendBooleanElement(dst, key, false)
	}},
	{"transactionLifetimeLimitSeconds", func(e *Server, dst []byte, key string) []byte {
		return e.Knobs.txnLifetime.appendTo(dst, key)
	}},
}

// int64Param returns an appender of a constant NumberLong parameter.
func int64Param(v int64) func(*Server, []byte, string) []byte {
	return func(_ *Server, dst []byte, key string) []byte { return bsoncore.AppendInt64Element(dst, key, v) }
}

// getParameter reports the named parameters, or all of them for {getParameter: "*"}. As in
// MongoDB, naming none that exists fails with "no option found to get".
func (e *Server) getParameter(_ context.Context, r *Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	all, details := false, false
	if s, ok := first.Value().StringValueOK(); ok && s == "*" {
		all = true
	}
	if d, ok := first.Value().DocumentOK(); ok {
		if s, ok := d.Lookup("allParameters").BooleanOK(); ok && s {
			all = true
		}
		details, _ = d.Lookup("showDetails").BooleanOK()
	}
	before := len(r.Out)
	for _, p := range parameters {
		if _, err := r.Body.LookupErr(p.name); !all && err != nil {
			continue
		}
		if !details {
			r.Out = p.append(e, r.Out, p.name)
			continue
		}
		// {showDetails: true}: {value, settableAtRuntime, settableAtStartup} per parameter.
		idx, out := bsoncore.AppendDocumentElementStart(r.Out, p.name)
		out = p.append(e, out, "value")
		out = bsoncore.AppendBooleanElement(out, "settableAtRuntime", !startupOnly[p.name])
		out = bsoncore.AppendBooleanElement(out, "settableAtStartup", true)
		r.Out, _ = bsoncore.AppendDocumentEnd(out, idx)
	}
	if len(r.Out) == before {
		return mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	return nil
}

// startupOnly are the reported parameters that MongoDB sets only at startup.
var startupOnly = map[string]bool{"authenticationMechanisms": true, "enableTestCommands": true, "featureCompatibilityVersion": true,
	"maxBSONDepth": true, "requireApiVersion": true, "localLogicalSessionTimeoutMinutes": true}

// setParameter changes runtime parameters: {setParameter: 1, <name>: <value>, ...}. As in
// MongoDB, every name is checked before any value is set, values are set in name order, and
// "was" reports the old value of the first.
func (e *Server) setParameter(_ context.Context, r *Request) error {
	vals := map[string]bsoncore.Value{}
	err := args.ForEach("setParameter", r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if err := e.checkSettable(key); err != nil {
			return true, err
		}
		if prev, dup := vals[key]; dup {
			return true, mongoerr.New(mongoerr.InvalidOptions,
				"attempted to set parameter [%s] twice in the same setParameter command, once to value: [%s], and once to value: [%s]",
				key, bsonx.ShellString(prev), bsonx.ShellString(v))
		}
		vals[key] = v
		return true, nil
	})
	if err != nil {
		return err
	}
	if len(vals) == 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "no option found to set, use help:true to see options ")
	}
	names := make([]string, 0, len(vals))
	for name := range vals {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		k := e.Knobs.byName(name)
		if i == 0 {
			r.Out = k.appendTo(r.Out, "was")
		}
		old := k.Load()
		if err := k.set(name, vals[name]); err != nil {
			return err
		}
		e.Log.Info("Successfully set parameter to new value", zap.String("parameter", name),
			zap.Int64("new_value", k.Load()), zap.Int64("old_value", old))
	}
	return nil
}

// checkSettable reports why setParameter cannot change name, if it cannot (the parameters
// other than knobs are fixed).
func (e *Server) checkSettable(name string) error {
	switch {
	case e.Knobs.byName(name) != nil:
		return nil
	case startupOnly[name]:
		return mongoerr.New(mongoerr.IllegalOperation, "not allowed to change [%s] at runtime", name)
	}
	for _, p := range parameters {
		if p.name == name {
			return mongoerr.New(mongoerr.NotImplemented, "setting %s at runtime is not supported by cleave", name)
		}
	}
	return mongoerr.New(mongoerr.InvalidOptions, "attempted to set unrecognized parameter [%s], use help:true to see options ", name)
}

// getLog answers getLog: "*" with the log names, and "global" or "startupWarnings" with
// recent lines as MongoDB's structured (JSON) log strings.
func (e *Server) getLog(_ context.Context, r *Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	name, ok := first.Value().StringValueOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "Argument to getLog must be of type String; found %s of type %s",
			first.Value().String(), bsonx.TypeName(first.Value().Type))
	}
	switch name {
	case "*":
		r.Out = bsonx.AppendStringArray(r.Out, "names", []string{"global", "startupWarnings"})
		return nil
	case "startupWarnings":
		r.Out = bsoncore.AppendInt32Element(r.Out, "totalLinesWritten", 0)
		r.Out = bsonx.AppendStringArray(r.Out, "log", nil)
		return nil
	case "global":
		var lines []string
		var total int64
		if e.Opts.Log != nil {
			lines, total = e.Opts.Log.Lines()
		}
		r.Out = bsoncore.AppendInt32Element(r.Out, "totalLinesWritten", int32(total))
		r.Out = bsonx.AppendStringArray(r.Out, "log", lines)
		return nil
	default:
		return mongoerr.New(mongoerr.OperationFailed, "No log named '%s'", name)
	}
}
