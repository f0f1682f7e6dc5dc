package server

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/session"
	"github.com/cleavedb/cleave/exec/txn"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"github.com/google/uuid"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// CurrentOpCommand answers {currentOp: 1, $all?, <filter>...} on admin: {inprog: [...]}, the
// documents of $currentOp ($all: true includes idle connections) that match the filter the
// other fields make, as mongod's currentOp command does.
func (h *Handlers) CurrentOpCommand(_ context.Context, r *command.Request) error {
	const cmd = "currentOp"
	idle := false
	fb := bsoncore.NewDocumentBuilder()
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case cmd:
			return true, nil
		case "$all":
			b, err := args.Bool(cmd, key, v)
			idle = b
			return true, err
		case "$ownOps", "$truncateOps", "$localOps", "$allUsers":
			return true, nil
		}
		if strings.HasPrefix(key, "$") {
			return false, nil // $db, lsid and the other generic fields
		}
		fb.AppendValue(key, v)
		return true, nil
	})
	if err != nil {
		return err
	}
	f, err := query.CompileFilter(fb.Build())
	if err != nil {
		return err
	}
	aidx, out := bsoncore.AppendArrayElementStart(r.Out, "inprog")
	i := 0
	for _, d := range h.CurrentOps(idle) {
		if ok, err := f.MatchErr(d); err != nil {
			return err
		} else if ok {
			out = bsoncore.AppendDocumentElement(out, strconv.Itoa(i), d)
			i++
		}
	}
	r.Out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return nil
}

// KillOpCommand answers {killOp: 1, op: <opid>} on admin: the command running with that opid
// is interrupted (it fails with 11601 Interrupted at its next check); MongoDB answers
// "attempting to kill op" whether or not the op still runs. A mongos-style "shard:opid"
// string is accepted too.
func (h *Handlers) KillOpCommand(_ context.Context, r *command.Request) error {
	const cmd = "killOp"
	v, err := r.Body.LookupErr("op")
	if err != nil {
		return args.Missing(cmd, "op")
	}
	var id int64
	switch v.Type {
	case bsoncore.TypeString:
		s := v.StringValue()
		if i := strings.LastIndexByte(s, ':'); i >= 0 {
			s = s[i+1:]
		}
		if id, err = strconv.ParseInt(s, 10, 64); err != nil {
			return mongoerr.New(mongoerr.BadValue, "invalid op : %s", v.StringValue())
		}
	default:
		n, ok := bsonx.NumberAsInt64(v)
		if !ok {
			return mongoerr.New(mongoerr.TypeMismatch, "Did not provide \"op\" field")
		}
		id = n
	}
	h.Conns.Range(func(_, c any) bool { return !c.(*command.Conn).KillOp(id) })
	r.Out = bsoncore.AppendStringElement(r.Out, "info", "attempting to kill op")
	return nil
}

// killSessions runs {killSessions: [{id, uid?}, ...]}: each names a session of the caller
// (lsid.uid is the caller's digest unless given, which takes impersonation); [] names every
// session of the authenticated user, and none without one, as in MongoDB.
func (h *Handlers) killSessions(ctx context.Context, r *command.Request) error {
	const cmd = "KillSessionsCmd"
	first, _ := bsonx.FirstElement(r.Body)
	arr, err := args.Array(cmd, "killSessions", first.Value())
	if err != nil {
		return err
	}
	caller := h.SessionUser(r).UID()
	vals, _ := arr.Values()
	if len(vals) == 0 {
		if !h.Access.Enabled() || len(r.Conn.Authn.Users) == 0 {
			return nil
		}
		return h.kill(ctx, []session.Pattern{{UID: &caller}})
	}
	patterns := make([]session.Pattern, 0, len(vals))
	for _, v := range vals {
		d, err := args.Doc(cmd, "killSessions", v)
		if err != nil {
			return err
		}
		id, ok := session.UUIDField(d, "id")
		if !ok {
			return session.LSIDFieldError(cmd+".killSessions", "id", d)
		}
		uid := &caller
		if uv, err := d.LookupErr("uid"); err == nil {
			given, ok := session.DigestField(uv)
			if !ok {
				return session.UIDError(cmd+".killSessions", uv)
			}
			if !h.mayImpersonate(r) {
				return mongoerr.New(mongoerr.Unauthorized, "Unauthorized to set user digest in LogicalSessionId")
			}
			uid = &given
		}
		patterns = append(patterns, session.Pattern{LSID: &id, UID: uid})
	}
	return h.kill(ctx, patterns)
}

// killAllSessions runs {killAllSessions: [{user, db}, ...]}.
func (h *Handlers) killAllSessions(ctx context.Context, r *command.Request) error {
	const cmd = "KillAllSessionsCmd"
	first, _ := bsonx.FirstElement(r.Body)
	arr, err := args.Array(cmd, "killAllSessions", first.Value())
	if err != nil {
		return err
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return h.kill(ctx, []session.Pattern{{}})
	}
	patterns := make([]session.Pattern, 0, len(vals))
	for _, v := range vals {
		u, err := session.ParseKillUser(cmd+".killAllSessions", v)
		if err != nil {
			return err
		}
		d := session.UserDigest(u)
		patterns = append(patterns, session.Pattern{UID: &d})
	}
	return h.kill(ctx, patterns)
}

// killAllSessionsByPattern runs {killAllSessionsByPattern: [pattern, ...]}.
func (h *Handlers) killAllSessionsByPattern(ctx context.Context, r *command.Request) error {
	const cmd = "KillAllSessionsByPatternCmd.killAllSessionsByPattern"
	first, _ := bsonx.FirstElement(r.Body)
	arr, err := args.Array("KillAllSessionsByPatternCmd", "killAllSessionsByPattern", first.Value())
	if err != nil {
		return err
	}
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return h.kill(ctx, []session.Pattern{{}})
	}
	patterns := make([]session.Pattern, 0, len(vals))
	for _, v := range vals {
		d, ok := v.DocumentOK()
		if !ok {
			return args.WrongType("KillAllSessionsByPatternCmd", "killAllSessionsByPattern", v.Type, "object")
		}
		p, err := session.ParsePattern(cmd, d)
		if err != nil {
			return err
		}
		if (p.Users > 0 || p.Roles > 0) && !h.mayImpersonate(r) {
			return mongoerr.New(mongoerr.Unauthorized, "Not authorized to impersonate in killAllSessionsByPattern")
		}
		patterns = append(patterns, p)
	}
	return h.kill(ctx, patterns)
}

// kill kills the sessions patterns match here, then on the nodes this node forwarded their
// transactions to (route.Router.KillSessions), as mongos passes the kill commands on to its
// shards.
func (h *Handlers) kill(ctx context.Context, patterns []session.Pattern) error {
	if err := h.Sessions.Kill(patterns); err != nil {
		return err
	}
	if h.Route == nil {
		return nil
	}
	return h.Route.KillSessions(ctx, func(id [16]byte, owner [32]byte) bool { return session.MatchesAny(patterns, id, owner) })
}

// mayImpersonate reports whether r's users may pass impersonation data (MongoDB's
// impersonate privilege, which only root and __system hold); anyone may without access
// control.
func (h *Handlers) mayImpersonate(r *command.Request) bool {
	if !h.Access.Enabled() {
		return true
	}
	reg := h.Access.Registry()
	var roles []auth.RoleName
	for _, n := range r.Conn.Authn.Users {
		if u := reg.User(n); u != nil {
			roles = append(roles, u.Roles...)
		}
	}
	for _, rn := range reg.Inherited(roles) {
		if rn.DB == "admin" && (rn.Role == "root" || rn.Role == "__system") {
			return true
		}
	}
	return false
}

// endSessions runs endSessions: the sessions leave the cache (their cursors close when the
// reaper next runs; their retryable-write records stay in the store), and end too on the
// nodes their transactions were forwarded to.
func (h *Handlers) endSessions(ctx context.Context, r *command.Request) error {
	ids := session.Listed(r.Body)
	h.Sessions.End(ids)
	if h.Route != nil {
		h.Route.EndSessions(ctx, ids)
	}
	return nil
}

// refreshSessions marks the listed sessions used now, so that they do not expire.
func (h *Handlers) refreshSessions(_ context.Context, r *command.Request) error {
	now := time.Now()
	for _, id := range session.Listed(r.Body) {
		h.Sessions.Touch(id, now)
	}
	return nil
}

// addSessionCommands registers the session commands.
func (h *Handlers) addSessionCommands(add func(*command.Command)) {
	add(&command.Command{Name: "startSession", Run: h.startSession, Action: auth.ActionNone, Help: "start a logical session"})
	add(&command.Command{Name: "endSessions", Run: h.endSessions, Action: auth.ActionNone, Help: "end a set of logical sessions", Props: command.APIV1})
	add(&command.Command{Name: "killSessions", Run: h.killSessions, Action: auth.ActionAuthenticated, Help: "kill a logical session and its operations"})
	add(&command.Command{Name: "refreshSessions", Run: h.refreshSessions, Action: auth.ActionNone, Help: "renew a set of logical sessions", Props: command.APIV1})
	add(&command.Command{Name: "killAllSessions", Run: h.killAllSessions, Action: auth.ActionClusterAdmin, Help: "kill all logical sessions, for a user, and their operations"})
	add(&command.Command{Name: "killAllSessionsByPattern", Run: h.killAllSessionsByPattern, Action: auth.ActionClusterAdmin, Help: "kill logical sessions by pattern"})
}

// startSession returns a new logical session id.
func (h *Handlers) startSession(_ context.Context, r *command.Request) error {
	id := uuid.New()
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "id")
	out = bsoncore.AppendBinaryElement(out, "id", 4, id[:])
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	out = bsoncore.AppendInt32Element(out, "timeoutMinutes", h.Sessions.TimeoutMinutes())
	r.Out = out
	return nil
}

// commitTransaction commits the transaction of the command; a retry of a committed one
// answers ok.
func (h *Handlers) commitTransaction(_ context.Context, r *command.Request) error {
	r.Wrote = true
	tx := r.Txn
	if tx == nil || tx.Phase.Load() == txn.Committed {
		return nil
	}
	rt, err := h.Txns.Commit(tx)
	if err != nil {
		return err
	}
	h.Sessions.Committed(tx.LSID, rt) // the session is checked out by this command
	return nil
}

// abortTransaction aborts the transaction of the command.
func (h *Handlers) abortTransaction(_ context.Context, r *command.Request) error {
	if r.Txn == nil {
		return nil
	}
	r.Txn.Abort()
	return nil
}

// addTransactionCommands registers commitTransaction and abortTransaction.
func (h *Handlers) addTransactionCommands(add func(*command.Command)) {
	add(&command.Command{Name: "commitTransaction", Run: h.commitTransaction, Action: auth.ActionAuthenticated, Help: "commit a transaction", AdminOnly: true, Props: command.InTxn | command.RetryableWrite | command.WriteConcern | command.APIV1})
	add(&command.Command{Name: "abortTransaction", Run: h.abortTransaction, Action: auth.ActionAuthenticated, Help: "abort a transaction", AdminOnly: true, Props: command.InTxn | command.RetryableWrite | command.WriteConcern | command.APIV1})
}
