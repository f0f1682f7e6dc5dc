package query

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// In cluster mode a read may target a shard of another node (a catalog.Remote stand-in).
// The planned per-shard part of the read — the filter, sort and hint it was planned for, the
// access path chosen, and the hash ranges of the partitions it targets on that shard — is
// then sent to the owner (_cleaveShardFind through Options.Peers: remote_wire.go), which plans the same read on its own catalog,
// checks that it agrees (OpenOwned: same ranges, same access path; otherwise StaleConfig)
// and streams the matching documents back in batches, from a snapshot, with the totals its
// reads cost. The ShardStream of the remote shard yields those documents; everything above
// it — the parallel readers, the k-way merge, sort, skip, limit, projection, $group's
// merger, count, explain's per-shard stats — is unchanged. The owner admits and meters the
// reads against its partitions' budgets; the router's stream charges nothing locally.

// RemoteScanSpec is one shard's part of a planned read, as its owner needs it.
type RemoteScanSpec struct {
	CI           *catalog.Coll
	Shard        int
	Filter, Vars bsoncore.Document
	// Collation is the full collation document the filter and the sort compare strings
	// with (nil: simple): the owner compiles them with it.
	Collation bsoncore.Document
	Sort      []bsonx.SortField
	Hint      bsoncore.Value
	Ranges    [][2]uint64 // sorted, as ShardStream.Ranges
	Plan      PlanSig
	// Limit is the most documents the router can need from the shard (0: all).
	Limit int64
	// Resume, when set, is the position (ShardStream.AppendPos) after which the owner
	// starts the read, or at which when ResumeUnread: a yielded stream's (scan_yield.go).
	Resume       []byte
	ResumeUnread bool
	// Linearizable: the read's concern is "linearizable" (Engine.WithBarrier), so the owner
	// passes the shard's read barrier before it reads.
	Linearizable bool
}

// PlanSig is what the router and the owner must agree on for the owner's documents to merge
// correctly with the others': the access path, the index and the order it yields.
type PlanSig struct {
	Kind            Kind
	Index           string
	Sorted, Reverse bool
	// KeysOnly and Distinct (the path, "" for none) with DistinctField: the owner reads index
	// keys alone (Plan.KeysOnly), or one entry per value of the path (Plan.DistinctScan), as
	// the router's plan does; it checks that its own plan can.
	KeysOnly      bool
	Distinct      string
	DistinctField int
}

// Sig returns p's signature.
func (p *Plan) Sig() PlanSig {
	s := PlanSig{Kind: p.Kind, Sorted: p.Sorted, Reverse: p.Reverse, KeysOnly: p.KeysOnly}
	if p.Index != nil {
		s.Index = p.Index.Meta.Name
		if p.DistinctScan {
			s.Distinct, s.DistinctField = p.Index.Fields[p.DistinctField].Path, p.DistinctField
		}
	}
	if p.Kind == PlanOr {
		s.Index = branchNames(p.Branches)
	}
	return s
}

// remoteRead is the state of a ShardStream whose shard is another node's.
type remoteRead struct {
	peers catalog.Peers
	rev   int64 // the router's catalog revision when it planned the read
	spec  RemoteScanSpec
	scan  *remoteScan
	docs  []byte // the rest of the current batch
	last  bool
	// pos is the rest of the current batch's positions, lastPos the position of the
	// document returned last (nil before the first); unpositioned: a batch came without
	// positions (an owner that does not send them), so the stream cannot yield. base are the
	// totals of the reads before the last yield.
	pos, lastPos []byte
	unpositioned bool
	base         ScanStats
	// point, when set, is the key of a point read, which goes as a compact request
	// (remote_point.go); sent counts those sent.
	point *remotePoint
	sent  *atomic.Int64
}

// newRemoteRead prepares ss's reads on another node (nothing is sent before the first read).
func (g *Engine) newRemoteRead(ss *ShardStream, p *Plan, f *match.Filter) {
	src, vars := f.Source()
	var coll bsoncore.Document
	if c, ok := f.Collator().(interface{ Document() bsoncore.Document }); ok {
		coll = c.Document()
	}
	ss.meters, ss.budgets = nil, nil // the owner admits and meters its reads
	ss.rem = &remoteRead{peers: g.opts.Peers, rev: g.cat.Store().Revision(), spec: RemoteScanSpec{
		CI: ss.ci, Shard: ss.Shard, Filter: src, Vars: vars, Collation: coll, Sort: p.sort, Hint: p.hint,
		Ranges: ss.Ranges, Plan: p.Sig(),
	}, sent: &g.points.sent}
	if g.shards == nil { // a transaction's or snapshot's views: the full request
		ss.rem.point = pointOf(ss.ci, p, f, vars, coll)
	}
}

// readRemote returns the next document of a remote read, fetching batches as needed.
func (ss *ShardStream) readRemote(ctx context.Context) (bsoncore.Document, error) {
	r := ss.rem
	if ss.yielded {
		ss.yielded = false
		r.resume(ss)
	}
	for {
		if len(r.docs) > 0 {
			d, rest, ok := bsoncore.ReadDocument(r.docs)
			if !ok {
				return nil, errors.New("query: malformed batch from a remote shard")
			}
			r.docs = rest
			if !r.unpositioned {
				n := posLen(r.pos)
				if n == 0 {
					return nil, errors.New("query: malformed positions from a remote shard")
				}
				r.lastPos, r.pos = r.pos[:n:n], r.pos[n:]
			}
			return d, nil
		}
		if r.last {
			return nil, nil
		}
		if r.scan == nil {
			r.scan = r.open()
		}
		b, err := r.scan.Next(ctx)
		if err != nil {
			return nil, err
		}
		r.docs, r.pos, r.last = b.Docs, b.Pos, b.Last
		r.unpositioned = r.unpositioned || b.Pos == nil && len(b.Docs) > 0
		stats := r.base.plus(&b.Stats)
		stats.Point = ss.Stats.Point
		stats.Partitions = ss.Stats.Partitions
		ss.Stats = stats
	}
}

// open prepares the read on the owner: a compact request for a point read, else the full
// one.
func (r *remoteRead) open() *remoteScan {
	if get := r.pointGet(); get != nil {
		r.sent.Add(1)
		return &remoteScan{peers: r.peers, shard: r.spec.Shard, db: r.spec.CI.Meta.DB, first: get}
	}
	return openRemoteScan(r.peers, r.rev, &r.spec)
}

// resume ends the remote read and prepares the next one to start where ss yielded.
func (r *remoteRead) resume(ss *ShardStream) {
	r.close()
	r.base = ss.Stats
	r.spec.Resume, r.spec.ResumeUnread = nil, ss.resumeUnread
	if ss.at.key != nil {
		r.spec.Resume = appendPos(nil, ss.at)
	}
	r.docs, r.pos, r.last = nil, nil, false
}

// plus returns the sum of two reads' totals.
func (s *ScanStats) plus(o *ScanStats) ScanStats {
	return ScanStats{DocsExamined: s.DocsExamined + o.DocsExamined, KeysExamined: s.KeysExamined + o.KeysExamined,
		BytesRead: s.BytesRead + o.BytesRead, Returned: s.Returned + o.Returned, BytesReturned: s.BytesReturned + o.BytesReturned}
}

// closeRemote ends a remote read.
func (r *remoteRead) close() {
	if r.scan != nil && !r.last {
		r.scan.Close()
	}
	r.scan, r.docs = nil, nil
}

// IsRemote reports whether the stream reads another node's shard.
func (ss *ShardStream) IsRemote() bool { return ss.rem != nil || (ss.pf != nil && ss.pf.rd.rem != nil) }

// OpenOwned opens, on the node that owns shard s, the stream of a read another node planned
// (RemoteScanSpec): it plans filter, sort and hint on ci, reading keys alone or one entry per
// value where sig says the router's plan does, and refuses with StaleConfig when this node's
// plan does not read the same ranges of s with the same access path (the two nodes' catalogs
// differ in a way that matters: the router refreshes and plans again).
func (g *Engine) OpenOwned(ci *catalog.Coll, f *match.Filter, sortSpec []bsonx.SortField, hint bsoncore.Value,
	s int, ranges [][2]uint64, sig PlanSig,
) (*ShardStream, error) {
	p, err := planQuery(ci, f, sortSpec, hint)
	if err != nil {
		return nil, err
	}
	if sig.KeysOnly {
		p.KeysOnly = filterExact(ci, p, f)
	}
	if sig.Distinct != "" {
		p = distinctPlan(&Query{CI: ci, Filter: f, Sort: sortSpec, Hint: hint, Distinct: sig.Distinct}, p)
	}
	if p.Kind == PlanEOF || p.Sig() != sig {
		return nil, staleConfig(ci, "the plan differs")
	}
	ss, err := g.NewShardStream(ci, p, f, s)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(ss.Ranges, ranges) {
		ss.Close()
		return nil, staleConfig(ci, "the shard's ranges differ")
	}
	return ss, nil
}

// staleConfig is the owner's answer to a read planned on another version of ci's map.
func staleConfig(ci *catalog.Coll, why string) error {
	return mongoerr.New(mongoerr.StaleConfig, "shard version mismatch for %s: %s", ci.NS(), why)
}
