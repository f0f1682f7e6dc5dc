package raftlog

import (
	"errors"
	"fmt"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
)

// memTableSize is the size of each memtable: a log's writes are small and its entries live
// briefly (compaction deletes them), so a modest memtable flushes little that is still live.
const memTableSize = 16 << 20

// Store is the raft log database of a node: one Pebble, holding the logs of every replica
// group on the node. It is safe for concurrent use; it must not be used after Close.
type Store struct {
	db     *pebble.DB
	dir    string
	logger *zap.Logger

	mu     sync.Mutex
	logs   map[uint64]*Log
	closed bool
}

// Open opens (creating) the node's raft log database in dir: its own Pebble, whose WAL Save
// syncs. A nil logger discards the logs.
func Open(dir string, logger *zap.Logger) (*Store, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	logger = logger.Named("raftlog").With(zap.String("dir", dir))
	db, err := pebble.Open(dir, &pebble.Options{
		MemTableSize:       memTableSize,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             logger.Sugar().Named("pebble"),
	})
	if err != nil {
		return nil, fmt.Errorf("raftlog: open %s: %w", dir, err)
	}
	logger.Info("raft log opened")
	return &Store{db: db, dir: dir, logger: logger, logs: make(map[uint64]*Log)}, nil
}

// Close closes the database; closing it again does nothing. The Logs it returned must no
// longer be used.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("raftlog: close %s: %w", s.dir, err)
	}
	s.logger.Info("raft log closed")
	return nil
}

// Groups returns the ids of the groups that have any persisted state, ascending.
func (s *Store) Groups() ([]uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixGroup}, UpperBound: []byte{prefixGroup + 1}})
	if err != nil {
		return nil, fmt.Errorf("raftlog: listing groups: %w", err)
	}
	var groups []uint64
	for valid := it.First(); valid; valid = it.SeekGE(groupEnd(groups[len(groups)-1])) {
		g, err := parseGroup(it.Key())
		if err != nil {
			return nil, errors.Join(err, it.Close())
		}
		groups = append(groups, g)
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("raftlog: listing groups: %w", err)
	}
	return groups, nil
}

// Group returns the log of group id, the same *Log at every call. It creates nothing: a group
// has persisted state once its log saves some.
func (s *Store) Group(id uint64) *Log {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.logs[id]
	if !ok {
		l = &Log{db: s.db, id: id}
		s.logs[id] = l
	}
	return l
}

// DeleteGroup removes every key of group id (a replica removed from this node), synced. The
// group's *Log stays valid and is then empty, as a group never saved.
func (s *Store) DeleteGroup(id uint64) error {
	l := s.Group(id)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := s.db.NewBatch()
	defer func() { _ = b.Close() }()
	if err := b.DeleteRange(groupStart(id), groupEnd(id), nil); err != nil {
		return fmt.Errorf("raftlog: group %d: delete: %w", id, err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		l.loaded = false // what Pebble holds is unknown: load it again
		return fmt.Errorf("raftlog: group %d: delete: %w", id, err)
	}
	l.st = emptyState()
	l.tail.reset()
	l.loaded = true
	s.logger.Info("raft group deleted", zap.Uint64("group", id))
	return nil
}
