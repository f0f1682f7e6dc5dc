package command

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The owner's side of remote execution (remote_read.go is the router's): internal commands
// that run the per-shard part of an operation on this node's shards. They are not for
// clients (mongos' _shardsvr commands play this role), need the internal action under --auth
// (only the cluster's own __system user has it: remote_auth.go), and answer StaleConfig
// 13388 when the request was planned on a map of the shard that differs from this node's.

// Batches of a remote read: the first is at most the router's limit (when small), each
// next one up to remoteBatchDocs documents or remoteBatchBytes.
const (
	remoteFirstBatch = 256
	remoteBatchDocs  = 2048
	remoteBatchBytes = 4 << 20
)

// addInternalCommands registers the internal shard commands.
func (e *Server) addInternalCommands(add func(*Command)) {
	add(&Command{Name: "_cleaveShardFind", Run: e.shardFind, Action: auth.ActionInternal, Help: "internal: a shard's part of a read", Props: Cursor})
	add(&Command{Name: "_cleaveShardGetMore", Run: e.shardGetMore, Action: auth.ActionInternal, Help: "internal: the next batch of a shard's read"})
	add(&Command{Name: "_cleaveShardKill", Run: e.shardKill, Action: auth.ActionInternal, Help: "internal: ends a shard's read"})
	add(&Command{Name: "_cleaveShardWrite", Run: e.shardWrite, Action: auth.ActionInternal, Help: "internal: the documents of an insert on this node's shards"})
	add(&Command{Name: "_cleaveShardIndexes", Run: e.shardIndexes, Action: auth.ActionInternal, Help: "internal: an index build's or drop's part on this node's shards"})
	add(&Command{Name: "_cleaveShardStats", Run: e.shardStats, Action: auth.ActionInternal, Help: "internal: a collection's sizes or validation on this node's shards"})
	add(&Command{Name: "_cleaveShardModify", Run: e.shardModify, Action: auth.ActionInternal, Help: "internal: a statement of an update, delete or findAndModify on this node's shards"})
}

// catchUp waits until this node's catalog reflects the router's revision rev.
func (e *Server) catchUp(ctx context.Context, rev int64) error {
	if rev <= e.Storage.Catalog.Revision() {
		return nil
	}
	if err := e.Storage.Catalog.WaitRevision(ctx, rev); err != nil {
		return mongoerr.Wrap(err, mongoerr.StaleConfig, "this node's catalog is behind revision %d", rev)
	}
	return nil
}

// ownedColl returns the collection an internal command names, checking that it is the one
// the router planned on (same id) and that shard s is this node's.
func (e *Server) ownedColl(ctx context.Context, r *Request, s int) (*catalog.Coll, error) {
	first, _ := bsonx.FirstElement(r.Body)
	name, _ := first.Value().StringValueOK()
	rev, _ := r.Body.Lookup("rev").Int64OK()
	if err := e.catchUp(ctx, rev); err != nil {
		return nil, err
	}
	if s >= 0 { // a write checks each document's shard (shardWrite)
		shards := e.Cat.Shards()
		if s >= len(shards) {
			return nil, mongoerr.New(mongoerr.StaleConfig, "shard %d is unknown to this node", s)
		}
		if node, remote := catalog.RemoteNode(shards[s]); remote {
			return nil, mongoerr.New(mongoerr.StaleConfig, "shard %d is on node %s, not this one", s, nodeName(node))
		}
	}
	ci, err := e.Cat.Lookup(r.DB, name)
	if err != nil {
		return nil, err
	}
	id, _ := r.Body.Lookup("collId").Int64OK()
	if ci == nil || int64(ci.Meta.ID) != id {
		return nil, mongoerr.New(mongoerr.StaleConfig, "collection %s.%s is not the one the request was planned on", r.DB, name)
	}
	return ci, nil
}

// shardFind opens a shard's part of a read planned on another node (query.RemoteScanSpec)
// and answers its first batch: {cursor: id (0: done), docs: binary (concatenated
// documents), stats}.
func (e *Server) shardFind(ctx context.Context, r *Request) error {
	b := r.Body
	s, _ := b.Lookup("shard").Int32OK()
	ci, err := e.ownedColl(ctx, r, int(s))
	if err != nil {
		return err
	}
	filter, _ := b.Lookup("filter").DocumentOK()
	vars, _ := b.Lookup("let").DocumentOK()
	// The router resolved the collation (explicit, the collection's default, or simple):
	// none sent is the simple one, whatever the collection's default.
	var coll bsonx.Collator
	if d, ok := b.Lookup("collation").DocumentOK(); ok {
		if coll, err = collationFor(d, nil); err != nil {
			return err
		}
	}
	f, err := query.CompileFilterWith(filter, vars, coll)
	if err != nil {
		return err
	}
	sortDoc, _ := b.Lookup("sort").DocumentOK()
	sortSpec, err := query.ParseSort(sortDoc)
	if err != nil {
		return err
	}
	hint, _ := b.LookupErr("hint")
	ranges, ok := decodeRanges(b.Lookup("ranges").Array())
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "_cleaveShardFind: malformed ranges")
	}
	pd, _ := b.Lookup("plan").DocumentOK()
	kind, _ := pd.Lookup("kind").Int32OK()
	index, _ := pd.Lookup("index").StringValueOK()
	keysOnly, _ := pd.Lookup("keysOnly").BooleanOK() // absent from an older router: none of the three
	distinct, _ := pd.Lookup("distinct").StringValueOK()
	distinctField, _ := pd.Lookup("distinctField").Int32OK()
	sig := query.PlanSig{Kind: query.Kind(kind), Index: index,
		Sorted: pd.Lookup("sorted").Boolean(), Reverse: pd.Lookup("reverse").Boolean(),
		KeysOnly: keysOnly, Distinct: distinct, DistinctField: int(distinctField)}
	ss, err := e.Query.OpenOwned(ci, f, sortSpec, hint, int(s), ranges, sig)
	if err != nil {
		return err
	}
	limit, _ := b.Lookup("limit").Int64OK()
	n := remoteFirstBatch
	if limit > 0 && limit < int64(n) {
		n = int(limit)
	}
	c := &cursor{ns: ci.NS(), stream: ss, coll: ci.Meta}
	return e.shardBatch(ctx, r, c, ss, n, true)
}

// shardBatch reads up to n documents of ss into r's reply and registers c (first) or
// keeps it while ss is not done.
func (e *Server) shardBatch(ctx context.Context, r *Request, c *cursor, ss *query.ShardStream, n int, first bool) error {
	buf := make([]byte, 0, 16<<10)
	done := false
	for i := 0; i < n && len(buf) < remoteBatchBytes; i++ {
		d, err := ss.Next(ctx)
		if err != nil {
			if first {
				ss.Close()
			} else {
				e.Cursors.remove(c.id)
			}
			return err
		}
		if d == nil {
			done = true
			break
		}
		buf = append(buf, d...)
	}
	stats := ss.Stats
	var id int64
	switch {
	case done && first:
		ss.Close()
	case done:
		e.Cursors.remove(c.id)
	case first:
		id = e.Cursors.add(c)
	default:
		id = c.id
	}
	out := bsoncore.AppendInt64Element(r.Out, "cursor", id)
	out = bsoncore.AppendBinaryElement(out, "docs", 0, buf)
	r.Out = appendScanStats(out, &stats)
	return nil
}

// shardGetMore answers the next batch of a shard's read.
func (e *Server) shardGetMore(ctx context.Context, r *Request) error {
	id, _ := bsonx.FirstElement(r.Body)
	c, err := e.Cursors.Acquire(id.Value().Int64())
	if err != nil {
		return err
	}
	ss, ok := c.stream.(*query.ShardStream)
	if !ok {
		e.Cursors.Done(c, false)
		return mongoerr.New(mongoerr.CursorNotFound, "cursor id %d is not a shard read", c.id)
	}
	c.lastUsed.Store(time.Now().UnixNano())
	err = e.shardBatch(ctx, r, c, ss, remoteBatchDocs, false)
	c.inUse.Store(false)
	return err
}

// shardKill ends a shard's read.
func (e *Server) shardKill(_ context.Context, r *Request) error {
	id, _ := bsonx.FirstElement(r.Body)
	e.Cursors.remove(id.Value().Int64())
	return nil
}
