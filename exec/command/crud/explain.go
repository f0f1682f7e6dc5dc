package crud

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/explain"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// explain runs {explain: <command>, verbosity}: it plans the inner command and describes
// the plan in mongos' sharded shape, running it for the executionStats verbosities.
func (h *Handlers) explain(ctx context.Context, r *command.Request) error {
	const cmd = "explain"
	first, _ := bsonx.FirstElement(r.Body)
	inner, ok := first.Value().DocumentOK()
	if !ok {
		return args.WrongType(cmd, cmd, first.Value().Type, "object")
	}
	verbosity := "allPlansExecution"
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "verbosity" {
			return false, nil
		}
		s, err := args.String(cmd, key, v)
		if err != nil {
			return true, err
		}
		switch s {
		case "queryPlanner", "executionStats", "allPlansExecution":
			verbosity = s
		default:
			return true, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'explain.verbosity' is not a valid value.", s)
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	innerFirst, ok := bsonx.FirstElement(inner)
	if !ok {
		return mongoerr.New(mongoerr.FailedToParse, "explain command requires a nested object")
	}
	name := innerFirst.Key()
	c := h.Commands.Get(name)
	if c == nil || !c.Has(command.Explainable) {
		return mongoerr.New(mongoerr.CommandNotFound, "Explain failed due to unknown command: %s", name)
	}
	// The inner command inherits $db from the explain.
	body := inner
	if _, err := inner.LookupErr("$db"); err != nil {
		idx, b := bsoncore.AppendDocumentStart(nil)
		b = append(b, inner[4:len(inner)-1]...)
		b = bsoncore.AppendStringElement(b, "$db", r.DB)
		body, _ = bsoncore.AppendDocumentEnd(b, idx)
	}
	sub := &command.Request{Conn: r.Conn, Body: body, Name: name, Cmd: c, DB: r.DB, RequestID: r.RequestID, Out: r.Out, Explain: verbosity}
	if err := c.Run(ctx, sub); err != nil {
		return err
	}
	r.Out = explain.Frame(sub.Out, len(r.Out), h.explainServerInfo(r))
	r.Charge += sub.Charge
	return nil
}

// explainServerInfo is the serverInfo of this server's explains: its host name, the port
// the client reached it on (the configured one for a connection without an address), and
// the version it answers as.
func (h *Handlers) explainServerInfo(r *command.Request) explain.ServerInfo {
	host, _ := os.Hostname()
	addr := h.ListenAddr()
	if r.Conn != nil && r.Conn.Info.Local != nil {
		addr = r.Conn.Info.Local.String()
	}
	port, _ := strconv.ParseInt(addr[strings.LastIndexByte(addr, ':')+1:], 10, 32)
	return explain.ServerInfo{Host: host, Port: int32(port), Version: command.ServerVersion, GitVersion: "cleave"}
}

// explainFind explains a find.
func (h *Handlers) explainFind(ctx context.Context, r *command.Request, a *findArgs) error {
	ci, err := h.Cat.Lookup(r.DB, a.coll)
	if err != nil {
		return err
	}
	q, err := compileFind(ci, a)
	if err != nil {
		return err
	}
	return h.explainQuery(ctx, r, q, "find", a.limit)
}

// explainQuery appends the explain output of a read of q (the query part of find, count,
// distinct, update and delete).
func (h *Handlers) explainQuery(ctx context.Context, r *command.Request, q *query.Query, cmd string, limit int64) error {
	ns := r.DB
	if q.CI != nil {
		ns = q.CI.NS()
	} else if first, ok := bsonx.FirstElement(r.Body); ok {
		ns += "." + first.Value().StringValue()
	}
	q.Limit = limit
	// count of a whole collection answers from its counters (count): it reads nothing.
	fast := cmd == "count" && q.Filter.IsEmpty() && q.Hint.Type == 0
	run, err := h.runExplained(ctx, r, q, fast, limit)
	if err != nil {
		return err
	}
	out := r.Out
	idx, out := bsoncore.AppendDocumentElementStart(out, "queryPlanner")
	out = bsoncore.AppendInt32Element(out, "mongosPlannerVersion", 1)
	root := ""
	switch {
	case fast:
		root = explain.RootFastCount
	case cmd == "count":
		root = explain.RootCount
	}
	out = explain.AppendWinningPlan(out, q, run.plan, run.shards, ns, root, h.shardConnString)
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	if r.Explain != "queryPlanner" {
		if !fast { // the counters cost nothing (count)
			for _, s := range run.shards {
				r.Charge += s.Stats.Charge()
			}
		}
		out = explain.AppendExecutionStats(out, run.shards, run.nReturned, run.elapsed, r.Charge, !fast)
	}
	cidx, out := bsoncore.AppendDocumentElementStart(out, "command")
	out = append(out, r.Body[4:len(r.Body)-1]...)
	out, _ = bsoncore.AppendDocumentEnd(out, cidx)
	r.Out = out
	return nil
}

// explained is what running a read for explain found: its plan, its shards' streams (and
// their statistics), the documents it returned and how long it took.
type explained struct {
	plan      *query.Plan
	shards    []*query.ShardStream
	nReturned int64
	elapsed   time.Duration
}

// runExplained plans q and, for the verbosities that execute, runs it to its limit (or, for
// a fast count, answers from the counters).
func (h *Handlers) runExplained(ctx context.Context, r *command.Request, q *query.Query, fast bool, limit int64) (explained, error) {
	var run explained
	if q.CI == nil {
		return run, nil
	}
	start := time.Now()
	stream, pl, ss, err := h.Query.Open(q)
	if err != nil {
		return run, err
	}
	defer stream.Close()
	run.plan, run.shards = pl, ss
	switch {
	case r.Explain == "queryPlanner":
	case fast:
		n, err := h.Route.DocCount(ctx, q.CI)
		if err != nil {
			return run, err
		}
		if run.nReturned = max(n-q.Skip, 0); limit > 0 {
			run.nReturned = min(run.nReturned, limit)
		}
	default:
		for limit == 0 || run.nReturned < limit {
			d, err := stream.Next(ctx)
			if err != nil {
				return run, err
			}
			if d == nil {
				break
			}
			run.nReturned++
		}
	}
	run.elapsed = time.Since(start)
	return run, nil
}

// shardConnString is shard s's connectionString in explain, as listShards' host: the shard's
// name and the address of the node that owns it (this one's, or another's in cluster mode,
// whose reads and statistics the owner answered).
func (h *Handlers) shardConnString(s int) string {
	host := h.ListenAddr()
	if h.Storage.Cluster != nil {
		if _, h := h.Storage.Cluster.ShardHost(s); h != "" {
			host = h
		}
	}
	return catalog.ShardName(s) + "/" + host
}
