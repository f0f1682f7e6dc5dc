package query

import (
	"context"
	"errors"
	"sync/atomic"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// A point read on another node's shard — one _id whose shard-key hash the router knows, no
// collation, let, resume or linearizable read concern — goes as a compact request,
// _cleaveShardGet (PointGet): the namespace, the collection's id, the catalog revision the
// router planned on, the shard, the hash and the _id, and the filter only when it is more
// than {_id: <value>}. The owner answers it as a Direct command (no session, transaction or
// stale-retry steps), with neither a plan nor, for {_id: <value>}, a compiled filter:
// ReadOwnedPoint reads the document by key through the same shard stream as every read
// (admission and meters against the partition's budget, the document cache, request units),
// after the same staleness checks as _cleaveShardFind (the collection's id, the shard
// being this node's, the partition of the hash on that shard). Its reply has
// _cleaveShardFind's shape with no cursor: {docs: binary, stats}. Anything else takes
// _cleaveShardFind.

// PointGetCommand names the compact point-read request.
const PointGetCommand = "_cleaveShardGet"

// PointGet is a compact point read: what the owner of shard Shard needs to read the one
// document of collection DB.Coll (id CollID) at Hash and ID.
type PointGet struct {
	catalog.CompactHead // where it goes, and the router's catalog revision
	Hash                uint64
	ID                  bsoncore.Value
	// Filter is the read's filter when it is more than {_id: ID} (nil: exactly that, and the
	// document at (Hash, ID) matches it by construction).
	Filter bsoncore.Document
}

// AppendPointGet appends g as a _cleaveShardGet command.
//
//	{_cleaveShardGet: "c", collId: 7, rev: 42, shard: 1, hash: <int64 bits>, id: "user1", $db: "db"}
func AppendPointGet(dst []byte, g *PointGet) []byte {
	idx, dst := catalog.AppendCompactStart(dst, PointGetCommand, &g.CompactHead)
	dst = bsoncore.AppendInt64Element(dst, "hash", int64(g.Hash))
	dst = bsoncore.AppendValueElement(dst, "id", g.ID)
	if g.Filter != nil {
		dst = bsoncore.AppendDocumentElement(dst, "filter", g.Filter)
	}
	return catalog.AppendCompactEnd(dst, idx, &g.CompactHead)
}

// ParsePointGet is AppendPointGet's inverse, in one pass over body (extra fields, such as
// the priority, are ignored); a missing or mistyped field is BadValue.
func ParsePointGet(body bsoncore.Document) (PointGet, error) {
	var g PointGet
	err := catalog.DecodeCompact(body, PointGetCommand, &g.CompactHead, 3, g.setField)
	return g, err
}

// setField sets the field of g that e holds, returning its bit among the required fields
// (0: optional or unknown) and false when e's value has the wrong type.
func (g *PointGet) setField(e bsoncore.Element) (bit uint16, ok bool) {
	ok, v := true, e.Value()
	switch e.Key() {
	case "hash":
		var h int64
		h, ok = v.Int64OK()
		g.Hash, bit = uint64(h), 1
	case "id":
		g.ID, bit = v, 2
	case "filter":
		g.Filter, ok = v.DocumentOK()
	}
	return bit, ok
}

// remotePoint is the key of a remote read that is a point read (newRemoteRead): the hash
// and _id of the one document it can return, and the filter the owner must check when it
// is more than {_id: id}.
type remotePoint struct {
	hash   uint64
	id     bsoncore.Value
	filter bsoncore.Document // nil: {_id: id} exactly
}

// pointOf returns the key of p's read on ci when a compact request can carry it: p reads one
// _id whose hash it knows, the filter has no let variables and compares without a
// collation, and ci is not time-series.
func pointOf(ci *catalog.Coll, p *Plan, f *match.Filter, vars, collation bsoncore.Document) *remotePoint {
	if ci.TS != nil || p.Kind != PlanIDs || len(p.ids) != 1 || !p.ids[0].hashSet || vars != nil || collation != nil {
		return nil
	}
	ids, ok := f.Equalities("_id")
	if !ok || len(ids) != 1 {
		return nil
	}
	src, _ := f.Source()
	rp := &remotePoint{hash: p.ids[0].hash, id: ids[0]}
	if !idOnly(src, ids[0]) {
		rp.filter = src
	}
	return rp
}

// idOnly reports whether filter is exactly {_id: id} with id of a type whose equality is
// the equality of its key encoding (the owner reads the document at that key, which is
// then a match): a string, number (not decimal), ObjectId, binary, date, timestamp or
// boolean.
func idOnly(filter bsoncore.Document, id bsoncore.Value) bool {
	el, ok := bsonx.FirstElement(filter)
	if !ok || el.Key() != "_id" || len(filter) != 4+1+len("_id")+1+len(el.Value().Data)+1 {
		return false
	}
	v := el.Value()
	switch v.Type {
	case bsoncore.TypeString, bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeObjectID,
		bsoncore.TypeBinary, bsoncore.TypeDateTime, bsoncore.TypeTimestamp, bsoncore.TypeBoolean:
		return v.Type == id.Type && string(v.Data) == string(id.Data)
	default:
		return false
	}
}

// pointGet returns the compact request of r's read, when it has one (nil: _cleaveShardFind).
func (r *remoteRead) pointGet() bsoncore.Document {
	spec := &r.spec
	if r.point == nil || spec.Resume != nil || spec.Linearizable {
		return nil
	}
	ci := spec.CI
	g := PointGet{CompactHead: catalog.CompactHead{DB: ci.Meta.DB, Coll: ci.Meta.Name, CollID: int64(ci.Meta.ID), Rev: r.rev, Shard: spec.Shard},
		Hash: r.point.hash, ID: r.point.id, Filter: r.point.filter}
	return AppendPointGet(make([]byte, 0, 64+len(g.Coll)+len(g.DB)+len(g.ID.Data)+len(g.Filter)), &g)
}

// ReadOwnedPoint reads, on the node owning shard s, the document a compact point read
// names (PointGet): at hash and _id id of ci, if it matches filter (nil: the read is
// {_id: id}, which the document at that key matches, and no filter is compiled). It refuses
// with StaleConfig, having read nothing, when the partition of hash is not on s in this
// node's map. The read is a point plan's, through the same shard stream as every read
// (admission, meters, the document cache); the stats are the read's totals, whose Charge
// the owner charges. The document is the caller's.
func (g *Engine) ReadOwnedPoint(ctx context.Context, ci *catalog.Coll, s int, hash uint64, id bsoncore.Value,
	filter bsoncore.Document,
) (bsoncore.Document, ScanStats, error) {
	if ci.TS != nil { // a router never sends one (pointOf)
		return nil, ScanStats{}, mongoerr.New(mongoerr.BadValue, "%s: %s is a time-series collection", PointGetCommand, ci.NS())
	}
	t := ci.Map.Locate(hash)
	if ci.Map.Partition(t).Shard != s {
		return nil, ScanStats{}, staleConfig(ci, "the shard's ranges differ")
	}
	var f *match.Filter
	if filter != nil {
		var err error
		if f, err = CompileFilterWith(filter, nil, nil); err != nil {
			return nil, ScanStats{}, err
		}
	}
	pr := new(pointRead)
	p := &pr.p
	p.Kind = PlanIDs
	p.targets = append(p.targetsBuf[:0], t)
	p.hashes = append(p.hashesBuf[:0], hashTarget{hash: hash})
	ids := [1]bsoncore.Value{id}
	p.ids = idTargets(ci, ids[:], p)
	p.ids[0].hash, p.ids[0].hashSet = hash, true
	ss := &pr.ss
	if err := g.initShardStream(ss, ci, p, f, s); err != nil {
		return nil, ScanStats{}, err
	}
	if ss.rem != nil { // NB: s is this node's (the caller checked): never sent on
		ss.Close()
		return nil, ScanStats{}, errors.New("query: a point read of another node's shard")
	}
	ss.exact = f == nil
	g.notePlan(ci, p)
	g.points.served.Add(1)
	doc, err := ss.Next(ctx)
	ss.Close()
	return doc, ss.Stats, err
}

// PointReads counts the compact point reads of a node: sent to other nodes, and served
// for them.
type PointReads struct {
	Sent, Served int64
}

// PointReads returns the node's compact point reads so far.
func (g *Engine) PointReads() PointReads {
	return PointReads{Sent: g.points.sent.Load(), Served: g.points.served.Load()}
}

// pointCounters are an Engine's counts of compact point reads (PointReads).
type pointCounters struct {
	sent, served atomic.Int64
}
