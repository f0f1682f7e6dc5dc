// Package host runs the replicas of shards that one node of a cluster holds (--replicas): it
// opens each replica's store, starts its raft group (package replica) over the node's raft log
// store, carries the groups' messages to the other nodes as internal commands, publishes the
// shards this node leads, and, as each group's leader, brings the group's members to the
// placement the cluster records (adding, promoting and removing replicas).
package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/cluster"
	"github.com/cleavedb/cleave/replica"
	"github.com/cleavedb/cleave/replica/raftlog"
	"github.com/cleavedb/cleave/store"
)

// Options configures a Host.
type Options struct {
	Node *cluster.Node
	// Dir holds the replicas' stores, <Dir>/replica-<shard>, and the raft logs, <Dir>/raft.
	Dir string
	// OpenStore opens a replica's store in dir with the node's store options.
	OpenStore func(dir string, shard int) (*store.DB, error)
	// Replicas is how many copies of each shard the leaders keep.
	Replicas int
	// DeadAfter is how long a replica's node may be absent from the cluster before its
	// replica is replaced elsewhere (0: never).
	DeadAfter time.Duration
	// Call runs an internal command on the node at addr (set before Start's groups send).
	Call   Caller
	Logger *zap.Logger
	// Tick is raft's tick (default 100ms).
	Tick time.Duration
	// CheckEvery is how often the leader of each shard compares its copies' digests (0:
	// never; CheckReplicas does it on demand).
	CheckEvery time.Duration
	// LogKeep is how many entries a group's log keeps below the applied index when it is
	// truncated, which it is every 2×LogKeep entries (0: replica's defaults).
	LogKeep uint64
	// OnChange is called (never concurrently with itself, and never while holding the
	// Host's locks) after the set of shards this node serves, or a shard's leader, changed.
	OnChange func()
	// AfterServe runs once a replica starts serving, in its own goroutine: what a node does
	// for the shards it owns at start (deleting dropped collections' data).
	AfterServe func(shard int, db *store.DB)
	// BeforeServe runs when a replica has become its group's leader and published itself,
	// before it serves (Serving, ServingShards): the node's catalog catches up with every
	// change the cluster committed until then. A partition move away from the shard guards
	// its flip with the leader record (store.Guard), so a flip either failed once this leader
	// published itself, or is in the catalog this leader serves by: a leader never takes
	// writes for a range its shard no longer owns. It is retried while it fails.
	BeforeServe func(shard int) error
}

// Host is the replicas of one node.
type Host struct {
	opts   Options
	log    *zap.Logger
	logs   *raftlog.Store
	net    *transport
	mu     sync.Mutex
	hosted map[int]*hosted
	// nodeOf maps every replica id of the placement to its node (the transport's routing,
	// read for every message without the lock; replaced whole by sync).
	nodeOf  atomic.Pointer[map[uint64]string]
	changed chan struct{} // a buffered wake-up of notify's goroutine
	// clusterTime, once set (SetClusterTime), is the node's cluster time, which every raft
	// message carries ($clusterTime) to the node it goes to.
	clusterTime atomic.Pointer[func() uint64]
	ctx         context.Context
	cancel      context.CancelFunc
	bg          sync.WaitGroup
	absent      map[string]time.Time // nodes seen absent, since when (reconcile's)
	// lastTransfer is when this node last handed a leadership away (balanceLeaders).
	lastTransfer time.Time
	// divergences counts the divergences consistency checks found (check.go).
	divergences atomic.Int64
}

// hosted is one replica this node holds. Its store changes when it installs a snapshot
// (snapshot.go): read it through store().
type hosted struct {
	shard int
	id    uint64
	db    atomic.Pointer[store.DB]
	g     *replica.Group
	// readyTerm is the term in which the replica published itself as leader and ran
	// BeforeServe: it serves only while it leads in that term.
	readyTerm atomic.Uint64
}

// serving reports whether r leads its group and serves: raft's leader, having applied an
// entry of its term, published and caught up (serve).
func (r *hosted) serving() bool {
	st := r.g.Status()
	return st.Serving && r.g.Serving() && r.readyTerm.Load() == st.Term
}

// store returns the replica's store.
func (r *hosted) store() *store.DB { return r.db.Load() }

// ready records that r, leader in term, published itself and caught up (serve), and reports
// whether it still leads in that term. readyTerm only grows: the serve of an earlier term,
// slow to publish (PublishLeader succeeds over a record of a later term) or to catch up, may
// finish after the replica lost its leadership and won it again in a later term, whose serve
// finished first; storing the earlier term then would keep the leader from serving for as
// long as it leads, while its record sends every router to it (StaleConfig "shard n is on
// node <this one>, not this one", to its own router too).
func (r *hosted) ready(term uint64) bool {
	for {
		old := r.readyTerm.Load()
		if old >= term || r.readyTerm.CompareAndSwap(old, term) {
			break
		}
	}
	now := r.g.Status()
	return now.Serving && now.Term == term
}

// Start opens the node's raft logs and the replicas the placement gives this node, and
// follows the placement from then on.
func Start(opts Options) (*Host, error) {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	logs, err := raftlog.Open(filepath.Join(opts.Dir, "raft"), opts.Logger.Named("raftlog"))
	if err != nil {
		return nil, fmt.Errorf("cannot open the raft logs: %w", err)
	}
	h := &Host{opts: opts, log: opts.Logger.Named("replicas"), logs: logs, hosted: map[int]*hosted{},
		changed: make(chan struct{}, 1), absent: map[string]time.Time{}}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	h.net = newTransport(h)
	if err := h.sync(); err != nil {
		h.Close()
		return nil, err
	}
	h.bg.Add(4)
	go func() { defer h.bg.Done(); h.checkLoop() }()
	go func() { defer h.bg.Done(); h.follow() }()
	go func() { defer h.bg.Done(); h.notifyLoop() }()
	go func() { defer h.bg.Done(); h.reconcileLoop() }()
	return h, nil
}

// Close stops every replica and closes their stores and the raft logs.
func (h *Host) Close() {
	h.cancel()
	h.bg.Wait()
	h.net.close()
	h.mu.Lock()
	all := h.hosted
	h.hosted = map[int]*hosted{}
	h.mu.Unlock()
	for _, r := range all {
		r.g.Stop()
		if err := r.store().Close(); err != nil && !errors.Is(err, store.ErrClosed) {
			h.log.Warn("cannot close a replica's store", zap.Int("shard", r.shard), zap.Error(err))
		}
	}
	if err := h.logs.Close(); err != nil {
		h.log.Warn("cannot close the raft logs", zap.Error(err))
	}
}

// SetClusterTime makes the raft messages this node sends carry now(), its cluster time, which
// the receiving node's clock moves to (as with any command's $clusterTime): the hybrid logical
// clocks of a group's replicas then order its leaders' times. A leader's change-log frontier
// comes from its clock and is confirmed by a quorum's answer to a message sent after it
// (changes.LeaderLog's read barrier); the next leader needs votes from a quorum, one of
// which has heard that clock, so its clock, and every record it stamps, is past any frontier a
// stream read from an earlier leader.
func (h *Host) SetClusterTime(now func() uint64) { h.clusterTime.Store(&now) }

// Serving returns the store of shard id when this node's replica serves it.
func (h *Host) Serving(id int) (*store.DB, bool) {
	h.mu.Lock()
	r := h.hosted[id]
	h.mu.Unlock()
	if r == nil || !r.serving() {
		return nil, false
	}
	return r.store(), true
}

// ServingShards returns the ids of the shards this node serves, in increasing order.
func (h *Host) ServingShards() []int {
	var out []int
	for _, r := range h.led() {
		out = append(out, r.shard)
	}
	slices.Sort(out)
	return out
}

// led returns the replicas here that lead and serve their groups.
func (h *Host) led() []*hosted {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*hosted
	for _, r := range h.hosted {
		if r.serving() {
			out = append(out, r)
		}
	}
	return out
}

// Status returns the status of this node's replica of shard id.
func (h *Host) Status(id int) (replica.Status, bool) {
	h.mu.Lock()
	r := h.hosted[id]
	h.mu.Unlock()
	if r == nil {
		return replica.Status{}, false
	}
	return r.g.Status(), true
}

// Stat is one of this node's copies as its group knows it (for /metrics).
type Stat struct {
	Shard  int
	Status replica.Status
	Lag    map[uint64]uint64 // on the leader: the entries each other copy lacks of the commit
}

// Stats reports this node's copies, in shard order.
func (h *Host) Stats() []Stat {
	h.mu.Lock()
	all := make([]*hosted, 0, len(h.hosted))
	for _, r := range h.hosted {
		all = append(all, r)
	}
	h.mu.Unlock()
	slices.SortFunc(all, func(a, b *hosted) int { return a.shard - b.shard })
	out := make([]Stat, 0, len(all))
	for _, r := range all {
		st := Stat{Shard: r.shard, Status: r.g.Status()}
		if st.Status.Serving {
			voters, learners := r.g.Members()
			st.Lag = map[uint64]uint64{}
			for _, id := range append(voters, learners...) {
				if match, commit, ok := r.g.Progress(id); ok && id != r.id {
					st.Lag[id] = commit - min(match, commit)
				}
			}
		}
		out = append(out, st)
	}
	return out
}

// WaitCopies waits until n copies of every shard this node serves hold what it applied so
// far (a write concern's w: n), or ctx ends.
func (h *Host) WaitCopies(ctx context.Context, n int) error {
	for _, r := range h.led() {
		if err := r.g.WaitCopies(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// follow opens and starts the replicas the placement adds for this node, until Close.
func (h *Host) follow() {
	for {
		ch := h.opts.Node.PlacementChanged()
		if err := h.sync(); err != nil {
			h.log.Warn("cannot start this node's replicas", zap.Error(err))
		}
		h.kick()
		select {
		case <-ch:
		case <-time.After(time.Second):
		case <-h.ctx.Done():
			return
		}
	}
}

// sync starts the replicas the placement gives this node and does not run yet, and stops
// those it no longer does.
func (h *Host) sync() error {
	placed := h.opts.Node.Placement()
	me := h.opts.Node.Name()
	nodeOf := map[uint64]string{}
	mine := map[int]cluster.Replica{}
	for id, p := range placed {
		for _, r := range p.Replicas {
			nodeOf[r.ID] = r.Node
			if r.Node == me {
				mine[id] = r
			}
		}
	}
	h.mu.Lock()
	h.nodeOf.Store(&nodeOf)
	var stop []*hosted
	for id, r := range h.hosted {
		if m, ok := mine[id]; !ok || m.ID != r.id {
			stop = append(stop, r)
			delete(h.hosted, id)
		}
	}
	h.mu.Unlock()
	for _, r := range stop {
		h.remove(r)
	}
	var errs []error
	for id, r := range mine {
		h.mu.Lock()
		_, running := h.hosted[id]
		h.mu.Unlock()
		if !running {
			errs = append(errs, h.startReplica(id, r, len(placed[id].Replicas) == 1))
		}
	}
	return errors.Join(errs...)
}

// nodeOfReplica returns the node replica id is on ("" when the placement does not know it).
func (h *Host) nodeOfReplica(id uint64) string {
	if m := h.nodeOf.Load(); m != nil {
		return (*m)[id]
	}
	return ""
}

// replicaDir is the directory of this node's replica of shard id.
func (h *Host) replicaDir(id int) string {
	return filepath.Join(h.opts.Dir, "replica-"+strconv.Itoa(id))
}

// startReplica opens the store of this node's replica r of shard id and starts its group. A
// replica alone in the placement bootstraps a new group; a replica that is not joining but
// finds its raft log empty lost its data (a wiped disk): it is not started, and leaves the
// placement so that the leader replaces it.
func (h *Host) startReplica(id int, r cluster.Replica, alone bool) error {
	log := h.logs.Group(uint64(id))
	last, err := log.LastIndex()
	if err != nil {
		return err
	}
	hs, _, err := log.InitialState()
	if err != nil {
		return err
	}
	if last == 0 && raft.IsEmptyHardState(hs) && !alone && !r.Joining {
		h.log.Error("this node's replica of a shard lost its raft log (a wiped data directory?): leaving the group so that it is replaced",
			zap.Int("shard", id), zap.Uint64("replica", r.ID))
		go h.dropLost(id, r.ID)
		return nil
	}
	if err := h.finishSwap(id); err != nil {
		return err
	}
	db, err := h.opts.OpenStore(h.replicaDir(id), id)
	if err != nil {
		return fmt.Errorf("cannot open the store of shard %d's replica: %w", id, err)
	}
	hr := &hosted{shard: id, id: r.ID}
	hr.db.Store(db)
	var peers []uint64
	if alone {
		peers = []uint64{r.ID}
	}
	g, err := replica.Start(replica.Config{
		Group: uint64(id), Replica: r.ID, Log: log, SM: replicaSM{h: h, r: hr}, Net: h.net, Peers: peers,
		Logger: h.opts.Logger, Tick: h.opts.Tick, CompactKeep: h.opts.LogKeep, CompactEvery: 2 * h.opts.LogKeep,
		BeforeServe: func() error { return hr.store().ReloadDerived() },
		OnChange:    func(st replica.Status) { h.onChange(hr, st) },
	})
	if err != nil {
		_ = db.Close()
		return err
	}
	hr.g = g
	db.SetProposer(g)
	h.mu.Lock()
	h.hosted[id] = hr
	h.mu.Unlock()
	h.log.Info("replica started", zap.Int("shard", id), zap.Uint64("replica", r.ID), zap.Bool("bootstrap", alone && last == 0))
	return nil
}

// remove stops a replica the placement no longer gives this node and deletes its data.
func (h *Host) remove(r *hosted) {
	r.g.Stop()
	if err := r.store().Close(); err != nil {
		h.log.Warn("cannot close a removed replica's store", zap.Int("shard", r.shard), zap.Error(err))
	}
	if err := h.logs.DeleteGroup(uint64(r.shard)); err != nil {
		h.log.Warn("cannot delete a removed replica's raft log", zap.Int("shard", r.shard), zap.Error(err))
	}
	if err := os.RemoveAll(h.replicaDir(r.shard)); err != nil {
		h.log.Warn("cannot delete a removed replica's store", zap.Int("shard", r.shard), zap.Error(err))
	}
	h.log.Info("replica removed from this node", zap.Int("shard", r.shard), zap.Uint64("replica", r.id))
}

// dropLost takes this node's lost replica rid of shard id out of the placement.
func (h *Host) dropLost(id int, rid uint64) {
	ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
	defer cancel()
	err := h.opts.Node.UpdatePlacement(ctx, id, func(p *cluster.Placement) bool {
		n := len(p.Replicas)
		p.Replicas = slices.DeleteFunc(p.Replicas, func(r cluster.Replica) bool { return r.ID == rid })
		return len(p.Replicas) != n
	})
	if err != nil {
		h.log.Warn("cannot take a lost replica out of the placement", zap.Int("shard", id), zap.Error(err))
	}
}

// onChange is a group's status change: publish this node as the shard's leader when it
// starts serving, and tell the executor.
func (h *Host) onChange(r *hosted, st replica.Status) {
	if st.Serving {
		go h.serve(r, st)
	}
	h.kick()
}

// serve publishes r as its shard's leader and then runs AfterServe, which repairs the shard:
// a move into the shard guards its flip with the leader record (store.Guard), so a repair
// that may delete the move's copy must follow a new record. Publishing is retried while r
// still serves in the same term.
func (h *Host) serve(r *hosted, st replica.Status) {
	rec := cluster.LeaderRecord{Node: h.opts.Node.Name(), Replica: r.id, Term: st.Term}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		ctx, cancel := context.WithTimeout(h.ctx, 10*time.Second)
		err := h.opts.Node.PublishLeader(ctx, r.shard, rec)
		cancel()
		if err == nil {
			break
		}
		h.log.Warn("cannot publish this node as a shard's leader; trying again", zap.Int("shard", r.shard), zap.Error(err))
		select {
		case <-h.ctx.Done():
			return
		case <-time.After(wait):
		}
		if now := r.g.Status(); !now.Serving || now.Term != st.Term {
			return
		}
	}
	if !h.beforeServe(r, st) || !r.ready(st.Term) {
		return
	}
	h.log.Info("serving a shard", zap.Int("shard", r.shard), zap.Uint64("term", st.Term))
	h.kick()
	if h.opts.AfterServe != nil {
		h.opts.AfterServe(r.shard, r.store())
	}
}

// beforeServe runs BeforeServe for r, leader in st's term, until it succeeds; false when r
// stopped leading in that term meanwhile, or the host closes.
func (h *Host) beforeServe(r *hosted, st replica.Status) bool {
	if h.opts.BeforeServe == nil {
		return true
	}
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
		err := h.opts.BeforeServe(r.shard)
		if err == nil {
			return true
		}
		h.log.Warn("a new leader cannot catch up with the catalog yet; it does not serve", zap.Int("shard", r.shard), zap.Error(err))
		select {
		case <-h.ctx.Done():
			return false
		case <-time.After(wait):
		}
		if now := r.g.Status(); !now.Serving || now.Term != st.Term {
			return false
		}
	}
}

// kick wakes the goroutine that calls OnChange.
func (h *Host) kick() {
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// notifyLoop calls OnChange after changes, one call at a time.
func (h *Host) notifyLoop() {
	for {
		select {
		case <-h.changed:
			if h.opts.OnChange != nil {
				h.opts.OnChange()
			}
		case <-h.ctx.Done():
			return
		}
	}
}
