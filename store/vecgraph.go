package store

import (
	"encoding/binary"
	"errors"
	"math"

	"github.com/cockroachdb/pebble/v2"
)

// Vector search graphs (exec/vecindex) are kept beside the collection's index entries, one
// record per graph node and one header per graph:
//
//	'v' | coll u32 BE | graph u64 BE | node u32 BE → node record (opaque to the store)
//	'v' | coll u32 BE | graph u64 BE | 0xffffffff  → the graph's header (opaque)
//
// A graph is derived state, a checkpoint of what its owner built from the documents: it is
// written unsynced, outside replication (each copy of a shard builds its own), and it is not
// part of a replica's checksum. Its owner reconciles it with the documents when it loads it,
// so a checkpoint older than the documents loses nothing. The collection's data deletion
// (DeleteCollectionData) drops its graphs.

// prefixGraph starts the keys of vector search graphs.
const prefixGraph byte = 'v'

// GraphHeader is the node number under which a graph's header is stored (ReadGraph).
const GraphHeader = math.MaxUint32

// GraphNode is one node record of a graph write.
type GraphNode struct {
	Node uint32
	Rec  []byte
}

// appendGraphCollPrefix appends 'v' | coll, the prefix of all graphs of coll.
func appendGraphCollPrefix(dst []byte, coll CollID) []byte {
	return binary.BigEndian.AppendUint32(append(dst, prefixGraph), uint32(coll))
}

// appendGraphPrefix appends 'v' | coll | graph, the prefix of one graph's keys.
func appendGraphPrefix(dst []byte, coll CollID, graph uint64) []byte {
	return binary.BigEndian.AppendUint64(appendGraphCollPrefix(dst, coll), graph)
}

// appendGraphNodeKey appends the key of node n of a graph.
func appendGraphNodeKey(dst []byte, coll CollID, graph uint64, n uint32) []byte {
	return binary.BigEndian.AppendUint32(appendGraphPrefix(dst, coll, graph), n)
}

// WriteGraph writes nodes and then header of graph of coll in one atomic, unsynced batch;
// with reset, every record of the graph written before goes first. A crash keeps a prefix of
// the writes, each whole, so a graph read back is the one of some WriteGraph.
func (db *DB) WriteGraph(coll CollID, graph uint64, reset bool, header []byte, nodes []GraphNode) error {
	if db.closed.Load() {
		return ErrClosed
	}
	if err := db.writeRefused(true); err != nil {
		return err
	}
	pb := db.pdb.NewBatch()
	defer func() { _ = pb.Close() }()
	var key []byte
	if reset {
		p := appendGraphPrefix(nil, coll, graph)
		_ = pb.DeleteRange(p, KeyPrefixEnd(p), nil)
	}
	for _, n := range nodes {
		key = appendGraphNodeKey(key[:0], coll, graph, n.Node)
		_ = pb.Set(key, n.Rec, nil)
	}
	_ = pb.Set(appendGraphNodeKey(key[:0], coll, graph, GraphHeader), header, nil)
	return pb.Commit(pebble.NoSync)
}

// DeleteGraph drops graph of coll (its search index was dropped or redefined).
func (db *DB) DeleteGraph(coll CollID, graph uint64) error {
	if db.closed.Load() {
		return ErrClosed
	}
	p := appendGraphPrefix(nil, coll, graph)
	return db.pdb.DeleteRange(p, KeyPrefixEnd(p), pebble.NoSync)
}

// ReadGraph calls fn with graph's header (n == GraphHeader), then with its node records in
// node order, until fn fails, all from one view; rec is valid only during the call. A graph
// never written has no header and no nodes: fn is not called.
func (db *DB) ReadGraph(coll CollID, graph uint64, fn func(n uint32, rec []byte) error) (err error) {
	if db.closed.Load() {
		return ErrClosed
	}
	snap := db.pdb.NewSnapshot()
	defer func() { err = errors.Join(err, snap.Close()) }()
	v, closer, err := snap.Get(appendGraphNodeKey(nil, coll, graph, GraphHeader))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	err = fn(GraphHeader, v)
	if err = errors.Join(err, closer.Close()); err != nil {
		return err
	}
	lower := appendGraphPrefix(nil, coll, graph)
	it, err := snap.NewIter(&pebble.IterOptions{LowerBound: lower,
		UpperBound: appendGraphNodeKey(nil, coll, graph, GraphHeader)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		v, err := it.ValueAndErr()
		if err == nil {
			err = fn(binary.BigEndian.Uint32(k[len(lower):]), v)
		}
		if err != nil {
			return errors.Join(err, it.Close())
		}
	}
	return it.Close()
}
