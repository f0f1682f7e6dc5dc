package server

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The profile command, as a mongos answers it: there is no system.profile to record into,
// so the level is always 0, and the command reads (profile: -1) or sets (profile: 0) the
// slow-operation threshold (slowms, --slow-op at start) and the fraction of slow operations
// that are logged (sampleRate). MongoDB's per-database filter is not supported.

// profile answers {profile: -1 | 0, slowms, sampleRate} with the previous settings.
func (h *Handlers) profile(_ context.Context, r *command.Request) error {
	level, err := args.Int64("profile", "profile", r.Body.Lookup("profile"))
	if err != nil {
		return err
	}
	if level != -1 && level != 0 {
		return mongoerr.New(mongoerr.BadValue, "Profiling is not permitted on mongoS: the 'profile' field should be 0 to change "+
			"'slowms', 'sampleRate', or 'filter' settings for logging, or -1 to view current values")
	}
	var slowms *int64
	var rate *float64
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "profile":
		case "slowms":
			n, err := args.Int64("profile", key, v)
			slowms = &n
			return true, err
		case "sampleRate":
			f, ok := bsonx.NumberAsFloat64(v)
			if !ok {
				return true, args.WrongType("profile", key, v.Type, "double")
			}
			if !(f >= 0 && f <= 1) {
				return true, mongoerr.New(mongoerr.BadValue, "'sampleRate' must be between 0.0 and 1.0 inclusive")
			}
			rate = &f
		case "filter":
			if s, ok := v.StringValueOK(); !ok || s != "unset" {
				return true, mongoerr.New(mongoerr.NotImplemented, "cleave does not support profile filters: slow operations are chosen by 'slowms' and 'sampleRate'")
			}
		default:
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	old, oldRate := h.SlowOps.Threshold(), h.SlowOps.SampleRate()
	var threshold *time.Duration
	if slowms != nil {
		d := time.Duration(*slowms) * time.Millisecond
		threshold = &d
	}
	h.SlowOps.Set(threshold, rate)
	out := bsoncore.AppendInt32Element(r.Out, "was", 0)
	out = bsonx.AppendNumber(out, "slowms", old.Milliseconds())
	r.Out = bsoncore.AppendDoubleElement(out, "sampleRate", oldRate)
	return nil
}
