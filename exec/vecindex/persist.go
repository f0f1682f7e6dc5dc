package vecindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/vector"
	"github.com/cleavedb/cleave/store"
)

// A shard's graph is checkpointed in the shard's Pebble (store's 'v' keys): after each sync
// that changed it, the nodes it changed (the new node and the neighbours it relinked, or the
// node it deleted) are written in one unsynced batch with the graph's header. At the first
// search after a start the graph is loaded from there and reconciled with the shard's
// documents, which are the truth: one scan adds what is not in the checkpoint (written after
// it, or lost with the unsynced tail of the WAL by a crash of the machine) and deletes the
// nodes whose document is gone or changed. A checkpoint is thus never wrong, only behind,
// and nothing acknowledged is lost; the scan costs a read of the documents, a rebuild an
// insertion each (about a millisecond at 100,000 vectors).
//
// The graph is not written in the documents' batches: an insertion into it costs that
// millisecond and rewrites up to 2M neighbour lists, which would sit in every write's latency
// and serialize the writers on the graph.

// graphStore is what a shard of this node offers to keep graphs (catalog's local shard).
type graphStore interface {
	WriteGraph(coll store.CollID, graph uint64, reset bool, header []byte, nodes []store.GraphNode) error
	ReadGraph(coll store.CollID, graph uint64, fn func(n uint32, rec []byte) error) error
	DeleteGraph(coll store.CollID, graph uint64) error
}

// graphID names the graph of one vector field of one search index among the collection's.
func graphID(index, path string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(index))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(path))
	return h.Sum64()
}

// graphDef is the part of an index definition a saved graph depends on: the definition
// without the vector fields' quantization, since a graph is built with the float32 vectors
// and its quantized codes are derived from them at load (a change of quantization reloads
// the graph rather than building it again).
func graphDef(def bsoncore.Document) []byte {
	fields, ok := def.Lookup("fields").ArrayOK()
	if !ok {
		return def
	}
	vals, _ := fields.Values()
	aidx, arr := bsoncore.AppendArrayStart(nil)
	for i, v := range vals {
		fd, ok := v.DocumentOK()
		if !ok {
			return def
		}
		didx, d := bsoncore.AppendDocumentStart(nil)
		elems, _ := fd.Elements()
		for _, el := range elems {
			if el.Key() != "quantization" {
				d = append(d, el...)
			}
		}
		d, _ = bsoncore.AppendDocumentEnd(d, didx)
		arr = bsoncore.AppendDocumentElement(arr, strconv.Itoa(i), d)
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, aidx)
	return bsoncore.NewDocumentBuilder().AppendArray("fields", arr).Build()
}

// SameGraph reports whether index definitions a and b build the same graphs (they differ
// at most in quantization), so that the saved graphs of a serve b.
func SameGraph(a, b bsoncore.Document) bool { return bytes.Equal(graphDef(a), graphDef(b)) }

// header is the saved graph's header: the index definition it was built for, then the
// graph's own.
func (x *shardIndex) header() []byte {
	dst := binary.AppendUvarint(nil, uint64(len(x.def)))
	dst = append(dst, x.def...)
	return x.g.AppendHeader(dst)
}

// appendNode appends node n's record: the graph's, then the document's hash, _id and filter
// fields.
func (x *shardIndex) appendNode(dst []byte, n int32) []byte {
	rec := x.g.AppendNode(nil, n)
	dst = binary.AppendUvarint(dst, uint64(len(rec)))
	dst = append(dst, rec...)
	nd := &x.nodes[n]
	dst = binary.BigEndian.AppendUint64(dst, nd.hash)
	dst = binary.AppendUvarint(dst, uint64(len(nd.id)))
	dst = append(dst, nd.id...)
	return append(dst, nd.filter...)
}

// readNode splits a node record into the graph's part and the document's.
func readNode(rec []byte) (graph []byte, nd node, ok bool) {
	l, k := binary.Uvarint(rec)
	if k <= 0 || uint64(len(rec)-k) < l+8 {
		return nil, nd, false
	}
	graph, rec = rec[k:k+int(l)], rec[k+int(l):]
	nd.hash, rec = binary.BigEndian.Uint64(rec), rec[8:]
	l, k = binary.Uvarint(rec)
	if k <= 0 || uint64(len(rec)-k) < l {
		return nil, nd, false
	}
	nd.id = append([]byte(nil), rec[k:k+int(l)]...)
	if rest := rec[k+int(l):]; len(rest) > 0 {
		nd.filter = append(bsoncore.Document(nil), rest...)
	}
	return graph, nd, true
}

// save writes the nodes changed since the last save (all of them, over what was saved, after
// a rebuild or a failed save). A failure leaves the graph serving: the next save writes it
// whole.
func (x *shardIndex) save() {
	if x.gs == nil {
		return
	}
	dirty := x.g.TakeDirty()
	if x.fullSave {
		dirty = dirty[:0]
		for n := range int32(x.g.Len()) {
			dirty = append(dirty, n)
		}
	}
	if len(dirty) == 0 {
		return
	}
	nodes := make([]store.GraphNode, len(dirty))
	for i, n := range dirty {
		nodes[i] = store.GraphNode{Node: uint32(n), Rec: x.appendNode(nil, n)}
	}
	if err := x.gs.WriteGraph(x.coll, x.gid, x.fullSave, x.header(), nodes); err != nil {
		x.log.Warn("cannot save the vector search graph; it is saved whole at the next change", zap.Error(err))
		x.fullSave = true
		return
	}
	x.fullSave = false
}

// errOtherDef stops reading a saved graph built for another definition.
var errOtherDef = errors.New("vecindex: saved graph of another definition")

// load restores the saved graph, if there is one for the index's definition; false when
// there is none or it cannot be restored (the caller builds the graph).
func (x *shardIndex) load() (bool, error) {
	if x.gs == nil {
		return false, nil
	}
	var r *vector.Restorer
	var nodes []node
	err := x.gs.ReadGraph(x.coll, x.gid, func(n uint32, rec []byte) error {
		if n == store.GraphHeader {
			l, k := binary.Uvarint(rec)
			if k <= 0 || uint64(len(rec)-k) < l || !bytes.Equal(rec[k:k+int(l)], x.def) {
				return errOtherDef
			}
			var err error
			r, err = vector.NewRestorer(rec[k+int(l):], uint64(x.coll))
			return err
		}
		graph, nd, ok := readNode(rec)
		if !ok {
			return fmt.Errorf("%w: node %d", vector.ErrCorrupt, n)
		}
		nodes = append(nodes, nd)
		return r.Node(int32(n), graph)
	})
	if errors.Is(err, errOtherDef) || errors.Is(err, vector.ErrCorrupt) {
		x.log.Info("the saved vector search graph cannot be used: building it", zap.Error(err))
		return false, nil
	}
	if err != nil || r == nil {
		return false, err
	}
	g, err := r.Graph()
	if err != nil {
		x.log.Info("the saved vector search graph cannot be used: building it", zap.Error(err))
		return false, nil
	}
	g.SetQuantization(x.field.Quant) // the codes are derived from the vectors, never saved
	x.g, x.nodes, x.byKey = g, nodes, make(map[string]int32, len(nodes))
	for n := range nodes {
		if !g.Deleted(int32(n)) {
			x.byKey[nodeKey(nodes[n].hash, nodes[n].id)] = int32(n)
		}
	}
	return true, nil
}

// reconcile brings the graph in line with the shard's documents in one scan: it keeps the
// nodes whose document still holds the same vector and filter fields, deletes the others,
// and adds the documents that have no node. What is written meanwhile is in the write log.
func (x *shardIndex) reconcile() (added, deleted int, err error) {
	seen := make([]bool, x.g.Len())
	it, err := x.sh.NewDocIter(x.coll, 0, 0)
	if err != nil {
		return 0, 0, err
	}
	for it.Next() {
		hash, id, doc := it.Hash(), it.ID(), it.Doc()
		k := nodeKey(hash, id)
		n, has := x.byKey[k]
		vec, ok := x.vectorOf(doc)
		if has && ok && x.g.Holds(n, vec) && bytes.Equal(x.nodes[n].filter, x.filterDoc(doc)) {
			seen[n] = true
			continue
		}
		if has {
			x.g.Delete(n)
			delete(x.byKey, k)
			deleted++
		}
		if ok {
			x.addVector(hash, id, doc, vec)
			added++
		}
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return added, deleted, err
	}
	for n, ok := range seen {
		if !ok && !x.g.Deleted(int32(n)) {
			x.g.Delete(int32(n))
			delete(x.byKey, nodeKey(x.nodes[n].hash, x.nodes[n].id))
			deleted++
		}
	}
	return added, deleted, nil
}

// open loads the saved graph and reconciles it, or builds the graph, at the first sync.
func (x *shardIndex) open() error {
	start := time.Now()
	loaded, err := x.load()
	if err != nil {
		return err
	}
	if !loaded {
		return x.rebuild()
	}
	saved := x.g.Len()
	added, deleted, err := x.reconcile()
	if err != nil {
		return err
	}
	x.log.Info("vector search graph loaded", zap.Int("saved", saved), zap.Int("added", added),
		zap.Int("deleted", deleted), zap.Int("nodes", x.g.Live()), zap.Duration("took", time.Since(start)))
	return nil
}
