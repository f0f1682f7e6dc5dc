package exec

import (
	"github.com/cleavedb/cleave/exec/write"

	"github.com/cleavedb/cleave/exec/catalog"

	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// shardState is what the executor keeps about partitions beyond the catalog: the policy,
// the per-partition meters, the hot-key reports, the source ranges waiting to be deleted
// after moves, and counters for serverStatus and partitionStats.
type shardState struct {
	policy   *shard.Policy
	opts     shard.Options
	interval time.Duration
	// moveGrace is how long a moved partition's source range stays after the ownership
	// flip, so that every stream that loaded the old map has taken its snapshots first.
	moveGrace time.Duration
	// meters maps a collection ID to its *shard.Meters, aligned with one partition map.
	meters sync.Map
	mu     struct {
		sync.Mutex
		hot      map[store.CollID][]shard.HotKeyReport
		retiring []retiredRange
		// copying are the destination ranges of moves in flight, not owned yet.
		copying []retiredRange
	}
	// configMu serializes the rewrites of the derived config collections (config_colls.go).
	configMu sync.Mutex

	// Counters for partitionStats and balancerStatus.
	splits, moves, hotKeys, conversions, rounds atomic.Int64
	// lastState is the catalog state the config collections were last written from (read
	// and written by the manager round only).
	lastState *store.CatalogState
	// round serializes manager rounds with the partitionStats command's forced round.
	round sync.Mutex
}

// retiredRange is the data a move left on its source shard, deleted once due.
type retiredRange struct {
	coll   store.CollID
	shard  int
	lo, hi uint64
	due    time.Time
}

// newShardState returns the sharding state for opts.
func newShardState(opts *Options, log *zap.Logger) *shardState {
	po := opts.Partitioning
	po.EnsureDefaults()
	p, err := shard.NewPolicy(po)
	if err != nil {
		log.Warn("invalid partitioning options; using the defaults", zap.Error(err))
		po = shard.Options{}
		po.EnsureDefaults()
		p, _ = shard.NewPolicy(po)
	}
	s := &shardState{policy: p, opts: p.Options(), interval: opts.PartitionCheckInterval, moveGrace: 5 * time.Second}
	if s.interval <= 0 {
		s.interval = time.Second
	}
	s.mu.hot = map[store.CollID][]shard.HotKeyReport{}
	return s
}

// shardSt returns the executor's sharding state; nil without storage.
func (e *Executor) shardSt() *shardState { return e.shards }

// metersFor returns the meters of ci's partitions, aligned with ci.pmap: meters of
// partitions that survive a map change carry over, new partitions start idle.
func (s *shardState) metersFor(ci *catalog.Coll) *shard.Meters {
	if v, ok := s.meters.Load(ci.Meta.ID); ok {
		m := v.(*shard.Meters)
		if m.Map() == ci.Map {
			return m
		}
		n := shard.NewMeters(ci.Map, m, s.opts.MeterOptions())
		s.meters.Store(ci.Meta.ID, n)
		return n
	}
	n := shard.NewMeters(ci.Map, nil, s.opts.MeterOptions())
	s.meters.Store(ci.Meta.ID, n)
	return n
}

// writeRU is the request units of one staged document write (shard.Cost's model).
func writeRU(ci *catalog.Coll, w *write.DocWrite) float64 {
	c := shard.Cost{DocsWritten: 1, IndexKeysWritten: int64(len(ci.WriteIndexes))}
	if w.Old != nil {
		c.DocsRead, c.BytesRead = 1, int64(len(w.Old))
	}
	if w.New != nil {
		c.BytesWritten = int64(len(w.New))
	}
	return c.RU()
}

// hotKeyLabel renders a label made by shardKeyLabel.
func hotKeyLabel(label string) string {
	if label == "" {
		return ""
	}
	v := bsoncore.Value{Type: bsoncore.Type(label[0]), Data: []byte(label[1:])}
	if err := v.Validate(); err != nil {
		return "<truncated>"
	}
	return bsonx.ShellString(v)
}

// onStage implements StageHook: it refuses a write that would take its logical partition
// past the limit and charges the write's request units to its partition's meter. The
// writer has rehashed w under its key locks.
func (e *Executor) onStage(ci *catalog.Coll, w *write.DocWrite) error {
	s := e.shardSt()
	if s == nil || ci.Hashed < 0 {
		return nil
	}
	newHash := w.Hash
	if w.New != nil && w.NewHash != 0 {
		newHash = w.NewHash
	}
	var lb [80]byte
	doc := w.New
	if doc == nil {
		doc = w.Old
	}
	label := ci.ShardKeyLabel(lb[:0], doc)
	if w.New != nil {
		adding := int64(len(w.New))
		if w.Old != nil && newHash == w.Hash {
			adding -= int64(len(w.Old))
		}
		if err := e.checkLogicalSize(ci, newHash, label, adding); err != nil {
			return err
		}
	}
	i := ci.Map.Locate(newHash)
	s.metersFor(ci).Record(i, newHash, label, writeRU(ci, w))
	return nil
}

// checkLogicalSize fails when adding bytes to the logical partition at hash would pass
// the limit. It only counts the key's documents when cheaper bounds (the collection's size
// on the shard, then the size of the 2^48-wide stats bucket around hash) say it may.
func (e *Executor) checkLogicalSize(ci *catalog.Coll, hash uint64, label []byte, adding int64) error {
	s := e.shardSt()
	limit := s.opts.LogicalPartitionMaxBytes
	if adding <= 0 {
		return nil
	}
	db := e.st.Shards[ci.Map.Partition(ci.Map.Locate(hash)).Shard]
	if _, bytes := db.CollStats(ci.Meta.ID); bytes+adding <= limit {
		return nil
	}
	lo := hash &^ (1<<shard.BucketShift - 1)
	if _, bytes, err := db.Stats(ci.Meta.ID, lo, lo+1<<shard.BucketShift); err != nil || bytes+adding <= limit {
		return nil
	}
	it, err := db.NewDocIter(ci.Meta.ID, hash, hash+1)
	if err != nil {
		return nil
	}
	var size int64
	for it.Next() {
		size += int64(len(it.Doc()))
	}
	_ = it.Close()
	if err := s.policy.CheckLogicalSize([]byte(hotKeyLabel(string(label))), size, adding); err != nil {
		return mongoerr.Wrap(err, mongoerr.ChunkTooBig, "%s", err.Error())
	}
	return nil
}

// readMeters returns the meters reads of ci charge: those of a sharded collection, nil
// otherwise (an unsharded collection never splits).
func (e *Executor) readMeters(ci *catalog.Coll) *shard.Meters {
	s := e.shardSt()
	if s == nil || ci.Hashed < 0 {
		return nil
	}
	return s.metersFor(ci)
}

// appendShardingStatus appends the partition manager's counters as one serverStatus-style
// section (for serverStatus and the metrics endpoint): splits, moves, hot-key reports,
// conversions of filled collections and manager rounds.
func (e *Executor) appendShardingStatus(dst []byte, key string) []byte {
	s := e.shardSt()
	idx, out := bsoncore.AppendDocumentElementStart(dst, key)
	out = bsoncore.AppendInt32Element(out, "shards", int32(len(e.st.Shards)))
	if s != nil {
		out = bsoncore.AppendInt64Element(out, "splits", s.splits.Load())
		out = bsoncore.AppendInt64Element(out, "moves", s.moves.Load())
		out = bsoncore.AppendInt64Element(out, "hotKeyReports", s.hotKeys.Load())
		out = bsoncore.AppendInt64Element(out, "conversions", s.conversions.Load())
		out = bsoncore.AppendInt64Element(out, "managerRounds", s.rounds.Load())
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}
