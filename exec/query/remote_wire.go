package query

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
)

// A shard's part of a read on another node goes as _cleaveShardFind (the spec, with the
// router's catalog revision) and continues with _cleaveShardGetMore on the owner's cursor;
// _cleaveShardKill ends it early. exec/command/node answers them (OpenOwned), with the
// documents as one binary, their positions, and the read's totals (AppendScanStats).

// openRemoteScan prepares spec's read on its shard's owner, reached through p; rev is the
// router's catalog revision, which the owner catches up to. Nothing is sent before the
// first Next.
func openRemoteScan(p catalog.Peers, rev int64, spec *RemoteScanSpec) *remoteScan {
	ci := spec.CI
	b := bsoncore.NewDocumentBuilder().
		AppendString("_cleaveShardFind", ci.Meta.Name).
		AppendInt64("collId", int64(ci.Meta.ID)).
		AppendInt64("rev", rev).
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
	return &remoteScan{peers: p, shard: spec.Shard, db: ci.Meta.DB, first: b.Build()}
}

// orEmpty returns d, or {} when d is nil.
func orEmpty(d bsoncore.Document) bsoncore.Document {
	if d == nil {
		return EmptyDoc
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

// DecodeRanges is EncodeRanges' inverse.
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

// remoteBatch is a batch of a remote read.
type remoteBatch struct {
	// Docs are the documents (concatenated BSON, owned by the caller); Pos, when the owner
	// sent it, the position of each (ShardStream.AppendPos, one after another), from which a
	// yielded stream resumes the read (RemoteScanSpec.Resume).
	Docs, Pos []byte
	// Stats are the owner's totals of the read so far; Last reports that no batch follows.
	Stats ScanStats
	Last  bool
}

// remoteScan is a read running on the owner of a shard: its first request, then its cursor.
type remoteScan struct {
	peers catalog.Peers
	shard int
	db    string
	first bsoncore.Document // sent by the first Next
	id    int64             // the owner's cursor; 0 once done
	// host is the node that answered the first request, where the cursor lives ("": not
	// known, peers cannot pin): the getMores and the kill go there, whichever node leads the
	// shard since (catalog.PinnedPeers).
	host string
}

// send runs cmd on the node at host, or when host is "" on the shard's owner, and returns
// the host it ran on ("" when peers cannot pin).
func (sc *remoteScan) send(ctx context.Context, host string, cmd bsoncore.Document) (bsoncore.Document, string, error) {
	if pp, ok := sc.peers.(catalog.PinnedPeers); ok {
		return pp.CommandPinned(ctx, sc.shard, host, cmd)
	}
	reply, err := sc.peers.Command(ctx, sc.shard, cmd)
	return reply, "", err
}

// Next returns the next batch of the read.
func (sc *remoteScan) Next(ctx context.Context) (remoteBatch, error) {
	cmd := sc.first
	if cmd == nil {
		cmd = bsoncore.NewDocumentBuilder().AppendInt64("_cleaveShardGetMore", sc.id).AppendString("$db", sc.db).Build()
	}
	sc.first = nil
	reply, host, err := sc.send(ctx, sc.host, cmd)
	if sc.host == "" {
		sc.host = host
	}
	if err != nil {
		sc.id = 0
		return remoteBatch{Last: true}, err
	}
	sc.id, _ = reply.Lookup("cursor").Int64OK()
	_, docs, _ := reply.Lookup("docs").BinaryOK()
	_, pos, _ := reply.Lookup("pos").BinaryOK() // absent from an owner whose read cannot yield
	return remoteBatch{Docs: docs, Pos: pos, Stats: decodeScanStats(reply.Lookup("stats")), Last: sc.id == 0}, nil
}

// Close ends the read on the owner, if it is not done: the owner's cursor is killed in the
// background.
func (sc *remoteScan) Close() {
	if sc.id == 0 {
		return
	}
	id, host := sc.id, sc.host
	sc.id = 0
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := bsoncore.NewDocumentBuilder().AppendInt64("_cleaveShardKill", id).AppendString("$db", sc.db).Build()
		_, _, _ = sc.send(ctx, host, cmd) // an unreachable owner times the cursor out
	}()
}

// AppendScanStats appends a read's totals as the stats element.
func AppendScanStats(dst []byte, s *ScanStats) []byte {
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "stats")
	dst = bsoncore.AppendInt64Element(dst, "docsExamined", s.DocsExamined)
	dst = bsoncore.AppendInt64Element(dst, "keysExamined", s.KeysExamined)
	dst = bsoncore.AppendInt64Element(dst, "bytesRead", s.BytesRead)
	dst = bsoncore.AppendInt64Element(dst, "returned", s.Returned)
	dst = bsoncore.AppendInt64Element(dst, "bytesReturned", s.BytesReturned)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// decodeScanStats is AppendScanStats' inverse.
func decodeScanStats(v bsoncore.Value) ScanStats {
	d, _ := v.DocumentOK()
	get := func(k string) int64 { n, _ := d.Lookup(k).Int64OK(); return n }
	return ScanStats{DocsExamined: get("docsExamined"), KeysExamined: get("keysExamined"), BytesRead: get("bytesRead"),
		Returned: get("returned"), BytesReturned: get("bytesReturned")}
}
