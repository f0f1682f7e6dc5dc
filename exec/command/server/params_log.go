package server

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// logParams are the parameters that set the server's log verbosity at runtime: MongoDB's
// logLevel (mongosh's db.setLogLevel(n) without a component) and logComponentVerbosity, whose
// top-level verbosity is the same setting. cleave logs with one verbosity for all components:
// 0 is the level the server started with (--log-level), 1 to 5 log at debug.
var logParams = map[string]bool{"logLevel": true, "logComponentVerbosity": true}

// appendLogLevel appends logLevel's value, 0 when the server keeps no log ring.
func appendLogLevel(h *Handlers, dst []byte, key string) []byte {
	return bsoncore.AppendInt32Element(dst, key, logVerbosity(h))
}

// appendLogComponentVerbosity appends logComponentVerbosity's value: {verbosity: logLevel}.
func appendLogComponentVerbosity(h *Handlers, dst []byte, key string) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, key)
	dst = bsoncore.AppendInt32Element(dst, "verbosity", logVerbosity(h))
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// logVerbosity is the current logLevel.
func logVerbosity(h *Handlers) int32 {
	if h.Opts.Log == nil {
		return 0
	}
	return h.Opts.Log.Verbosity()
}

// setLogParam sets name (one of logParams) to v, appending "was" (its old value) to r.Out
// first when was is true. Errors are MongoDB's.
func (h *Handlers) setLogParam(r *command.Request, was bool, name string, v bsoncore.Value) error {
	n, err := parseVerbosity(name, v)
	if err != nil {
		return err
	}
	if was {
		if name == "logLevel" {
			r.Out = appendLogLevel(h, r.Out, "was")
		} else {
			r.Out = appendLogComponentVerbosity(h, r.Out, "was")
		}
	}
	old := h.Opts.Log.Verbosity()
	h.Opts.Log.SetVerbosity(n)
	h.Log.Info("Successfully set parameter to new value", zap.String("parameter", name),
		zap.Int32("new_value", n), zap.Int32("old_value", old))
	return nil
}

// parseVerbosity returns the verbosity v sets name to: logLevel takes a number ≥ 0,
// logComponentVerbosity a document whose verbosity is a number (below 0: back to 0).
func parseVerbosity(name string, v bsoncore.Value) (int32, error) {
	if name == "logLevel" {
		f, ok := bsonx.NumberAsFloat64(v)
		if !ok || f < 0 || math.IsNaN(f) {
			return 0, mongoerr.New(mongoerr.BadValue, "Invalid value for logLevel: logLevel: %s", bsonx.ShellString(v))
		}
		return int32(min(f, math.MaxInt32)), nil
	}
	doc, ok := v.DocumentOK()
	if !ok {
		return 0, mongoerr.New(mongoerr.BadValue, "log component verbosity is not a BSON object: logComponentVerbosity: %s", bsonx.ShellString(v))
	}
	elems, err := doc.Elements()
	if err != nil {
		return 0, mongoerr.New(mongoerr.BadValue, "log component verbosity is not a valid BSON object")
	}
	var n int32
	for _, e := range elems {
		if e.Key() != "verbosity" {
			return 0, mongoerr.New(mongoerr.NotImplemented,
				"cleave logs with one verbosity for all components: set logComponentVerbosity.verbosity or logLevel, not logComponentVerbosity.%s", e.Key())
		}
		f, ok := bsonx.NumberAsFloat64(e.Value())
		if !ok || math.IsNaN(f) {
			return 0, mongoerr.New(mongoerr.BadValue, "Expected logComponentVerbosity.verbosity to be a number but found %s", bsonx.TypeName(e.Value().Type))
		}
		n = int32(max(0, min(f, math.MaxInt32)))
	}
	return n, nil
}
