package server

import (
	"context"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// parameter is one server parameter getParameter can report.
type parameter struct {
	name   string
	append func(h *Handlers, dst []byte, key string) []byte
}

// parameters are the server parameters cleave reports, sorted by name as getParameter: "*"
// lists them. Values are cleave's effective settings.
var parameters = []parameter{
	{"allowDiskUseByDefault", func(h *Handlers, dst []byte, key string) []byte {
		return h.Knobs.DiskUseByDefault.AppendTo(dst, key)
	}},
	// authSchemaVersion is the version of the users' schema, SCRAM credentials since 3.0.
	{"authSchemaVersion", func(_ *Handlers, dst []byte, key string) []byte { return bsoncore.AppendInt32Element(dst, key, 5) }},
	{"authenticationMechanisms", func(_ *Handlers, dst []byte, key string) []byte {
		return bsonx.AppendStringArray(dst, key, []string{"SCRAM-SHA-1", "SCRAM-SHA-256"})
	}},
	{"cursorTimeoutMillis", int64Param(600_000)},
	{"enableTestCommands", func(h *Handlers, dst []byte, key string) []byte {
		return bsoncore.AppendBooleanElement(dst, key, h.Opts.TestCommands)
	}},
	{"featureCompatibilityVersion", func(_ *Handlers, dst []byte, key string) []byte {
		idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
		dst = bsoncore.AppendStringElement(dst, "version", command.Fcv)
		dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
		return dst
	}},
	{"internalDocumentSourceGroupMaxMemoryBytes", func(h *Handlers, dst []byte, key string) []byte {
		return h.Knobs.GroupMemory.AppendTo(dst, key)
	}},
	{"internalDocumentSourceGraphLookupMaxMemoryBytes", func(h *Handlers, dst []byte, key string) []byte {
		return h.Knobs.GraphMemory.AppendTo(dst, key)
	}},
	{"internalQueryMaxBlockingSortMemoryUsageBytes", func(h *Handlers, dst []byte, key string) []byte {
		return h.Knobs.SortMemory.AppendTo(dst, key)
	}},
	{"localLogicalSessionTimeoutMinutes", func(h *Handlers, dst []byte, key string) []byte {
		return bsoncore.AppendInt32Element(dst, key, h.Sessions.TimeoutMinutes())
	}},
	{"logComponentVerbosity", appendLogComponentVerbosity},
	{"logLevel", appendLogLevel},
	{"maxBSONDepth", func(_ *Handlers, dst []byte, key string) []byte { return bsoncore.AppendInt32Element(dst, key, 200) }},
	{"minSnapshotHistoryWindowInSeconds", func(h *Handlers, dst []byte, key string) []byte {
		return h.Knobs.SnapshotWindow.AppendTo(dst, key)
	}},
	{"quiet", func(_ *Handlers, dst []byte, key string) []byte {
		return bsoncore.AppendBooleanElement(dst, key, false)
	}},
	{"requireApiVersion", func(_ *Handlers, dst []byte, key string) []byte {
		return bsoncore.AppendBooleanElement(dst, key, false)
	}},
	{"transactionLifetimeLimitSeconds", func(h *Handlers, dst []byte, key string) []byte {
		return h.Knobs.TxnLifetime.AppendTo(dst, key)
	}},
	{"ttlMonitorSleepSecs", func(h *Handlers, dst []byte, key string) []byte {
		return h.Knobs.TTLMonitorSleep.AppendTo(dst, key)
	}},
}

// int64Param returns an appender of a constant NumberLong parameter.
func int64Param(v int64) func(*Handlers, []byte, string) []byte {
	return func(_ *Handlers, dst []byte, key string) []byte { return bsoncore.AppendInt64Element(dst, key, v) }
}

// getParameter reports the named parameters, or all of them for {getParameter: "*"}. As in
// MongoDB, naming none that exists fails with "no option found to get".
func (h *Handlers) getParameter(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	all, details := false, false
	if s, ok := first.Value().StringValueOK(); ok && s == "*" {
		all = true
	}
	if d, ok := first.Value().DocumentOK(); ok {
		// Both are safeBool in MongoDB's IDL: a number is true unless zero.
		var err error
		if v, e := d.LookupErr("allParameters"); e == nil {
			if all, err = args.Bool("getParameter", "allParameters", v); err != nil {
				return err
			}
		}
		if v, e := d.LookupErr("showDetails"); e == nil {
			if details, err = args.Bool("getParameter", "showDetails", v); err != nil {
				return err
			}
		}
	}
	before := len(r.Out)
	for _, p := range parameters {
		if _, err := r.Body.LookupErr(p.name); !all && err != nil {
			continue
		}
		if !details {
			r.Out = p.append(h, r.Out, p.name)
			continue
		}
		// {showDetails: true}: {value, settableAtRuntime, settableAtStartup} per parameter.
		idx, out := bsoncore.AppendDocumentElementStart(r.Out, p.name)
		out = p.append(h, out, "value")
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
var startupOnly = map[string]bool{"authSchemaVersion": true, "authenticationMechanisms": true, "enableTestCommands": true, "featureCompatibilityVersion": true,
	"maxBSONDepth": true, "requireApiVersion": true, "localLogicalSessionTimeoutMinutes": true}

// setParameter changes runtime parameters: {setParameter: 1, <name>: <value>, ...}. As in
// MongoDB, every name is checked before any value is set, values are set in name order, and
// "was" reports the old value of the first.
func (h *Handlers) setParameter(_ context.Context, r *command.Request) error {
	vals := map[string]bsoncore.Value{}
	err := args.ForEach("setParameter", r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if err := h.checkSettable(key); err != nil {
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
		if logParams[name] {
			if err := h.setLogParam(r, i == 0, name, vals[name]); err != nil {
				return err
			}
			continue
		}
		k := h.Knobs.ByName(name)
		if i == 0 {
			r.Out = k.AppendTo(r.Out, "was")
		}
		old := k.Load()
		if err := k.Set(name, vals[name]); err != nil {
			return err
		}
		h.Log.Info("Successfully set parameter to new value", zap.String("parameter", name),
			zap.Int64("new_value", k.Load()), zap.Int64("old_value", old))
	}
	return nil
}

// checkSettable reports why setParameter cannot change name, if it cannot (the parameters
// other than knobs are fixed).
func (h *Handlers) checkSettable(name string) error {
	switch {
	case h.Knobs.ByName(name) != nil, logParams[name] && h.Opts.Log != nil:
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
func (h *Handlers) getLog(_ context.Context, r *command.Request) error {
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
		if h.Opts.Log != nil {
			lines, total = h.Opts.Log.Lines()
		}
		r.Out = bsoncore.AppendInt32Element(r.Out, "totalLinesWritten", int32(total))
		r.Out = bsonx.AppendStringArray(r.Out, "log", lines)
		return nil
	default:
		return mongoerr.New(mongoerr.OperationFailed, "No log named '%s'", name)
	}
}
