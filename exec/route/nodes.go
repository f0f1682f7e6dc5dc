package route

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/access"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The router's side of remote execution (docs/cluster.md): a read of another
// node's shard sends _cleaveShardFind to the owner and continues with _cleaveShardGetMore;
// writes in writes.go, the owner's side in exec/command/node. Every request carries
// the router's catalog revision; the owner catches up to it before answering, and answers
// StaleConfig when its own map of the shard differs (the router then waits for its own
// catalog to catch up and runs the command again: exec/stale.go).

// remoteTimeout bounds one internal request whose command has no deadline of its own.
const remoteTimeout = 5 * time.Minute

// Nodes reaches other nodes' shards through a pool of internal clients, authenticated with
// the cluster's key and over TLS when the node has a certificate. It is query's Remote (reads), ddl's Remote (index builds and drops)
// and sharding's Peers (moves), and carries the internal commands of writes and statistics.
type Nodes struct {
	cat     *catalog.Catalog
	records *store.Catalog // its revision goes with every request
	cluster sharding.Cluster
	pool    *wire.Pool
}

// NewNodes returns the way to cluster c's other nodes, for catalog cat whose records are
// records; key is the cluster's key ("" : no internal authentication), tc the TLS
// configuration of the connections to the other nodes (nil: plain TCP).
func NewNodes(cat *catalog.Catalog, records *store.Catalog, c sharding.Cluster, key string, tc *tls.Config) *Nodes {
	opts := wire.ClientOptions{TLS: tc}
	if key != "" {
		opts.Hello = access.InternalHello(key)
	}
	return &Nodes{cat: cat, records: records, cluster: c, pool: wire.NewPool(opts)}
}

// Command runs cmd on the node owning shard s and returns its {ok: 1} reply; an {ok: 0}
// reply becomes its *mongoerr.Error, a node that is down or does not answer
// HostUnreachable.
func (rs *Nodes) Command(ctx context.Context, s int, cmd bsoncore.Document) (bsoncore.Document, error) {
	node, host := rs.cluster.ShardHost(s)
	if host == "" && node == "" {
		// A replicated shard with no leader up (an election under way): the owner's answer
		// to a router that routed too early, which waits for a leader and plans again.
		return nil, mongoerr.New(mongoerr.StaleConfig, "%s has no leader at the moment", catalog.ShardName(s))
	}
	if host == "" {
		return nil, mongoerr.New(mongoerr.HostUnreachable, "%s is on node %s, which is down", catalog.ShardName(s), NodeName(node))
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, remoteTimeout)
		defer cancel()
	}
	reply, err := rs.pool.Client(host).Command(ctx, cmd)
	if err != nil {
		var ue *wire.UnreachableError
		if errors.As(err, &ue) && ue.NotSent && rs.replicated(s) {
			// The leader's node is gone (its record not replaced yet): nothing ran; the
			// router waits for the next leader and plans again.
			return nil, mongoerr.Wrap(err, mongoerr.StaleConfig, "%s's leader on node %s (%s) cannot be reached: %v",
				catalog.ShardName(s), NodeName(node), host, ue.Err)
		}
		if errors.As(err, &ue) {
			return nil, mongoerr.Wrap(err, mongoerr.HostUnreachable, "%s is on node %s (%s), which cannot be reached: %v",
				catalog.ShardName(s), NodeName(node), host, ue.Err)
		}
		return nil, err
	}
	if ok, _ := bsonx.NumberAsFloat64(reply.Lookup("ok")); ok != 1 {
		return nil, mongoerr.FromReply(reply)
	}
	return reply, nil
}

// NodeName names node in a message.
func NodeName(node string) string {
	if node == "" {
		return "(none)"
	}
	return node
}

// OpenScan implements query.Remote.
func (rs *Nodes) OpenScan(_ context.Context, spec *query.RemoteScanSpec) (query.RemoteScan, error) {
	ci := spec.CI
	b := bsoncore.NewDocumentBuilder().
		AppendString("_cleaveShardFind", ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", rs.records.Revision()).
		AppendInt32("shard", int32(spec.Shard)).
		AppendDocument("filter", orEmpty(spec.Filter))
	if spec.Vars != nil {
		b.AppendDocument("let", spec.Vars)
	}
	if spec.Collation != nil {
		b.AppendDocument("collation", spec.Collation)
	}
	if len(spec.Sort) > 0 {
		b.AppendDocument("sort", bsonx.SortSpecDoc(spec.Sort))
	}
	if spec.Hint.Type != 0 {
		b.AppendValue("hint", spec.Hint)
	}
	b.AppendArray("ranges", EncodeRanges(spec.Ranges))
	b.AppendDocument("plan", bsoncore.NewDocumentBuilder().
		AppendInt32("kind", int32(spec.Plan.Kind)).AppendString("index", spec.Plan.Index).
		AppendBoolean("sorted", spec.Plan.Sorted).AppendBoolean("reverse", spec.Plan.Reverse).
		AppendBoolean("keysOnly", spec.Plan.KeysOnly).AppendString("distinct", spec.Plan.Distinct).
		AppendInt32("distinctField", int32(spec.Plan.DistinctField)).Build())
	if spec.Resume != nil {
		b.AppendBinary("resume", 0, spec.Resume).AppendBoolean("resumeUnread", spec.ResumeUnread)
	}
	if spec.Linearizable {
		b.AppendDocument("readConcern", bsoncore.NewDocumentBuilder().AppendString("level", "linearizable").Build())
	}
	b.AppendInt64("limit", spec.Limit).AppendString("$db", ci.Meta.DB)
	return &remoteScan{rs: rs, shard: spec.Shard, db: ci.Meta.DB, first: b.Build()}, nil
}

// orEmpty returns d, or {} when d is nil.
func orEmpty(d bsoncore.Document) bsoncore.Document {
	if d == nil {
		return query.EmptyDoc
	}
	return d
}

// EncodeRanges encodes hash ranges as [[lo, hi], ...] of int64 (the uint64 bits).
func EncodeRanges(rs [][2]uint64) bsoncore.Array {
	ab := bsoncore.NewArrayBuilder()
	for _, r := range rs {
		ab.AppendArray(bsoncore.NewArrayBuilder().AppendInt64(int64(r[0])).AppendInt64(int64(r[1])).Build())
	}
	return ab.Build()
}

// DecodeRanges is encodeRanges' inverse.
func DecodeRanges(a bsoncore.Array) ([][2]uint64, bool) {
	vals, err := a.Values()
	if err != nil {
		return nil, false
	}
	out := make([][2]uint64, 0, len(vals))
	for _, v := range vals {
		pair, ok := v.ArrayOK()
		if !ok {
			return nil, false
		}
		v0, err0 := pair.IndexErr(0)
		v1, err1 := pair.IndexErr(1)
		if err0 != nil || err1 != nil {
			return nil, false
		}
		lo, ok1 := v0.Int64OK()
		hi, ok2 := v1.Int64OK()
		if !ok1 || !ok2 {
			return nil, false
		}
		out = append(out, [2]uint64{uint64(lo), uint64(hi)})
	}
	return out, true
}

// remoteScan is a read running on the owner of a shard: its first request, then its cursor.
type remoteScan struct {
	rs    *Nodes
	shard int
	db    string
	first bsoncore.Document // sent by the first Next
	id    int64             // the owner's cursor; 0 once done
}

// Next implements query.RemoteScan.
func (sc *remoteScan) Next(ctx context.Context) (query.RemoteBatch, error) {
	cmd := sc.first
	if cmd == nil {
		cmd = bsoncore.NewDocumentBuilder().AppendInt64("_cleaveShardGetMore", sc.id).AppendString("$db", sc.db).Build()
	}
	sc.first = nil
	reply, err := sc.rs.Command(ctx, sc.shard, cmd)
	if err != nil {
		sc.id = 0
		return query.RemoteBatch{Last: true}, err
	}
	sc.id, _ = reply.Lookup("cursor").Int64OK()
	_, docs, _ := reply.Lookup("docs").BinaryOK()
	_, pos, _ := reply.Lookup("pos").BinaryOK() // absent from an owner whose read cannot yield
	return query.RemoteBatch{Docs: docs, Pos: pos, Stats: decodeScanStats(reply.Lookup("stats")), Last: sc.id == 0}, nil
}

// Close implements query.RemoteScan: the owner's cursor is killed in the background.
func (sc *remoteScan) Close() {
	if sc.id == 0 {
		return
	}
	id := sc.id
	sc.id = 0
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := bsoncore.NewDocumentBuilder().AppendInt64("_cleaveShardKill", id).AppendString("$db", sc.db).Build()
		_, _ = sc.rs.Command(ctx, sc.shard, cmd) // an unreachable owner times the cursor out
	}()
}

// AppendScanStats appends a read's totals as the stats element.
func AppendScanStats(dst []byte, s *query.ScanStats) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "stats")
	dst = bsoncore.AppendInt64Element(dst, "docsExamined", s.DocsExamined)
	dst = bsoncore.AppendInt64Element(dst, "keysExamined", s.KeysExamined)
	dst = bsoncore.AppendInt64Element(dst, "bytesRead", s.BytesRead)
	dst = bsoncore.AppendInt64Element(dst, "returned", s.Returned)
	dst = bsoncore.AppendInt64Element(dst, "bytesReturned", s.BytesReturned)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// decodeScanStats is appendScanStats' inverse.
func decodeScanStats(v bsoncore.Value) query.ScanStats {
	d, _ := v.DocumentOK()
	get := func(k string) int64 { n, _ := d.Lookup(k).Int64OK(); return n }
	return query.ScanStats{DocsExamined: get("docsExamined"), KeysExamined: get("keysExamined"), BytesRead: get("bytesRead"),
		Returned: get("returned"), BytesReturned: get("bytesReturned")}
}

// SpansRemote reports whether some partition of ci is on another node's shard.
func (r *Router) SpansRemote(ci *catalog.Coll) bool {
	shards := r.cat.Shards()
	for i := range ci.Map.Len() {
		if _, ok := shards[ci.Map.Partition(i).Shard].Node(); ok {
			return true
		}
	}
	return false
}

// replicated reports whether shard s is kept in several copies (its leader may change).
func (rs *Nodes) replicated(s int) bool {
	r, ok := rs.cluster.(sharding.ReplicaSets)
	if !ok {
		return false
	}
	_, ok = r.ShardReplicas(s)
	return ok
}
