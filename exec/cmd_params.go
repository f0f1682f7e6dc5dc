package exec

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// parameter is one server parameter getParameter can report.
type parameter struct {
	name   string
	append func(dst []byte, key string) []byte
}

// parameters are the server parameters cleave reports, sorted by name as getParameter: "*"
// lists them. Values are cleave's effective settings.
var parameters = []parameter{
	{"authenticationMechanisms", func(dst []byte, key string) []byte {
		return appendStringArray(dst, key, []string{"SCRAM-SHA-256"})
	}},
	{"cursorTimeoutMillis", int64Param(600_000)},
	{"featureCompatibilityVersion", func(dst []byte, key string) []byte {
		idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
		dst = bsoncore.AppendStringElement(dst, "version", fcv)
		dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
		return dst
	}},
	{"internalQueryMaxBlockingSortMemoryUsageBytes", int64Param(100 * 1024 * 1024)},
	{"logLevel", func(dst []byte, key string) []byte { return bsoncore.AppendInt32Element(dst, key, 0) }},
	{"maxBSONDepth", func(dst []byte, key string) []byte { return bsoncore.AppendInt32Element(dst, key, 200) }},
	{"quiet", func(dst []byte, key string) []byte { return bsoncore.AppendBooleanElement(dst, key, false) }},
	{"transactionLifetimeLimitSeconds", func(dst []byte, key string) []byte { return bsoncore.AppendInt32Element(dst, key, 60) }},
}

// int64Param returns an appender of a constant NumberLong parameter.
func int64Param(v int64) func([]byte, string) []byte {
	return func(dst []byte, key string) []byte { return bsoncore.AppendInt64Element(dst, key, v) }
}

// getParameter reports the named parameters, or all of them for {getParameter: "*"}. As in
// MongoDB, naming none that exists fails with "no option found to get".
func (e *Executor) getParameter(_ context.Context, r *request) error {
	first, _ := firstElement(r.body)
	all := false
	if s, ok := first.Value().StringValueOK(); ok && s == "*" {
		all = true
	}
	if d, ok := first.Value().DocumentOK(); ok {
		if s, ok := d.Lookup("allParameters").BooleanOK(); ok && s {
			all = true
		}
	}
	before := len(r.out)
	for _, p := range parameters {
		if all {
			r.out = p.append(r.out, p.name)
			continue
		}
		if _, err := r.body.LookupErr(p.name); err == nil {
			r.out = p.append(r.out, p.name)
		}
	}
	if len(r.out) == before {
		return mongoerr.New(mongoerr.InvalidOptions, "no option found to get")
	}
	return nil
}

// getLog answers getLog: "*" with the log names, and "global" or "startupWarnings" with
// recent lines as MongoDB's structured (JSON) log strings.
func (e *Executor) getLog(_ context.Context, r *request) error {
	first, _ := firstElement(r.body)
	name, ok := first.Value().StringValueOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "Argument to getLog must be of type String; found %s of type %s",
			first.Value().String(), bsonx.TypeName(first.Value().Type))
	}
	switch name {
	case "*":
		r.out = appendStringArray(r.out, "names", []string{"global", "startupWarnings"})
		return nil
	case "startupWarnings":
		r.out = bsoncore.AppendInt32Element(r.out, "totalLinesWritten", 0)
		r.out = appendStringArray(r.out, "log", nil)
		return nil
	case "global":
		var lines []string
		var total int64
		if e.opts.Log != nil {
			lines, total = e.opts.Log.Lines()
		}
		r.out = bsoncore.AppendInt32Element(r.out, "totalLinesWritten", int32(total))
		r.out = appendStringArray(r.out, "log", lines)
		return nil
	default:
		return mongoerr.New(mongoerr.OperationFailed, "No log named '%s'", name)
	}
}
