package server

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/params"
)

// addRWConcernCommands registers setDefaultRWConcern and getDefaultRWConcern, the
// cluster-wide default read and write concerns (exec/command/rwdefaults.go).
func (h *Handlers) addRWConcernCommands(add func(*command.Command)) {
	add(&command.Command{Name: "setDefaultRWConcern", Run: h.setDefaultRWConcern, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "set the current read/write concern defaults (cluster-wide)", Props: command.WriteConcern})
	add(&command.Command{Name: "getDefaultRWConcern", Run: h.getDefaultRWConcern, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "get the current read/write concern defaults being applied by this node"})
	add(&command.Command{Name: command.RWDefaultsCommand, Run: h.takeRWDefaults, Action: auth.ActionInternal, AdminOnly: true,
		Help: "internal: the read/write concern defaults another node just set"})
}

// takeRWDefaults answers {_cleaveRWDefaults: <defaults>}: this node applies the defaults
// another node of its cluster just set (command.Server.TakeRWDefaults).
func (h *Handlers) takeRWDefaults(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	doc, err := args.Doc(r.Name, r.Name, first.Value())
	if err != nil {
		return err
	}
	h.TakeRWDefaults(doc)
	return nil
}

// setDefaultRWConcern answers {setDefaultRWConcern: 1, defaultReadConcern, defaultWriteConcern}
// with the defaults it set, as getDefaultRWConcern reports them.
func (h *Handlers) setDefaultRWConcern(ctx context.Context, r *command.Request) error {
	var rc, wc bsoncore.Document
	err := args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "defaultReadConcern":
			rc, err = args.Doc(r.Name, key, v)
		case "defaultWriteConcern":
			wc, err = args.Doc(r.Name, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	d, err := h.SetRWDefaults(ctx, rc, wc)
	if err != nil {
		return err
	}
	r.Out = appendRWDefaults(r.Out, d, h.RWDefaults.LocalUpdate())
	return nil
}

// getDefaultRWConcern answers {getDefaultRWConcern: 1, inMemory}: the defaults as the cluster
// holds them (read again first), or with inMemory: true those this node applies now.
func (h *Handlers) getDefaultRWConcern(ctx context.Context, r *command.Request) error {
	var inMemory bool
	err := args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "inMemory" {
			return false, nil
		}
		var err error
		inMemory, err = args.Bool(r.Name, key, v)
		return true, err
	})
	if err != nil {
		return err
	}
	if !inMemory {
		if err := h.LoadRWDefaults(ctx); err != nil {
			return err
		}
	}
	local := h.RWDefaults.LocalUpdate()
	if local.IsZero() {
		local = h.Started
	}
	r.Out = appendRWDefaults(r.Out, h.RWDefaults.Load(), local)
	if inMemory {
		r.Out = bsoncore.AppendBooleanElement(r.Out, "inMemory", true)
	}
	return nil
}

// appendRWDefaults appends the defaults d in MongoDB 7.0's reply shape: each concern with
// its source ("global" when set, "implicit": readConcern local and w: "majority"), the time
// of the last change when there was one, and when this node learned them.
func appendRWDefaults(out []byte, d *params.RWConcernDefaults, local time.Time) []byte {
	rc, rcSource := d.ReadConcern, "global"
	if rc == nil {
		rc, rcSource = bsoncore.NewDocumentBuilder().AppendString("level", "local").Build(), "implicit"
	}
	wc, wcSource := d.WriteConcern, "global"
	if wc == nil {
		wc, wcSource = bsoncore.NewDocumentBuilder().AppendString("w", "majority").AppendInt32("wtimeout", 0).Build(), "implicit"
	}
	out = bsoncore.AppendDocumentElement(out, "defaultReadConcern", rc)
	out = bsoncore.AppendDocumentElement(out, "defaultWriteConcern", wc)
	if d.UpdateOpTime != 0 {
		out = bsoncore.AppendTimestampElement(out, "updateOpTime", uint32(d.UpdateOpTime>>32), uint32(d.UpdateOpTime))
		out = bsoncore.AppendDateTimeElement(out, "updateWallClockTime", d.UpdateWallClock.UnixMilli())
	}
	out = bsoncore.AppendStringElement(out, "defaultReadConcernSource", rcSource)
	out = bsoncore.AppendStringElement(out, "defaultWriteConcernSource", wcSource)
	return bsoncore.AppendDateTimeElement(out, "localUpdateWallClockTime", local.UnixMilli())
}
