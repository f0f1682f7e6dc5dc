package sharding

import (
	"sync"
	"time"
)

// Event is one change of a partition map this node's manager committed: a split, a merge or
// a move, as config.changelog records MongoDB's chunk operations. The console draws them
// over time.
type Event struct {
	Time time.Time
	Kind string // "split", "merge" or "move"
	NS   string
	// Partitions are the partitions the change retired (the parent of a split, the merged
	// ones, the moved one), and Into those it made (a split's children, a merge's result).
	Partitions, Into []uint64
	// From and To are a move's shards (-1 otherwise).
	From, To int
	Reason   string
}

// maxEvents bounds the events a manager keeps: the most recent, oldest dropped first.
const maxEvents = 512

// eventRing is the manager's recent events, oldest first.
type eventRing struct {
	mu     sync.Mutex
	events []Event
}

// add records e, dropping the oldest past maxEvents.
func (r *eventRing) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.events) == maxEvents {
		r.events = append(r.events[:0], r.events[1:]...)
	}
	r.events = append(r.events, e)
}

// Events returns the partition-map changes this node's manager committed since the server
// started, oldest first: at most the last 512, a copy.
func (m *Manager) Events() []Event {
	m.events.mu.Lock()
	defer m.events.mu.Unlock()
	return append([]Event(nil), m.events.events...)
}

// noteEvent records one committed change of a partition map.
func (m *Manager) noteEvent(kind, ns string, parts, into []uint64, from, to int, reason string) {
	m.events.add(Event{Time: time.Now(), Kind: kind, NS: ns, Partitions: parts, Into: into, From: from, To: to, Reason: reason})
}
