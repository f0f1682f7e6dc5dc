package replica

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// LogStore is a group's raft log on this node (replica/raftlog's Log): raft's Storage plus
// the writes a Ready asks for, synced before they return.
type LogStore interface {
	raft.Storage
	// Save persists a Ready's snapshot, entries and hard state in one synced write.
	Save(hs *raftpb.HardState, ents []*raftpb.Entry, snap *raftpb.Snapshot) error
	// SetConfState records the configuration after a configuration change was applied.
	SetConfState(cs *raftpb.ConfState) error
	// Compact discards the entries up to index, remembering cs as the configuration there.
	Compact(index uint64, cs *raftpb.ConfState) error
}

// StateMachine is what a group's committed entries are applied to: a shard's store.DB.
type StateMachine interface {
	// ApplyReplicated applies entry (index, term) whose data is a proposal's payload (empty
	// for an entry that writes nothing); an index at or below the applied one changes
	// nothing.
	ApplyReplicated(index, term uint64, data []byte) error
	// ReplicaApplied returns the index and term of the last entry applied.
	ReplicaApplied() (index, term uint64, err error)
	// SyncApplied makes what was applied durable and returns the index it covers: the log
	// may be truncated up to it.
	SyncApplied() (uint64, error)
	// InstallSnapshot replaces the state with the leader's, received out of band for the
	// snapshot meta describes before its message was stepped (the transport stages it); the
	// state installed has applied meta's index or more. An error stops the replica.
	InstallSnapshot(meta *raftpb.SnapshotMetadata) error
}

// Transport carries a group's messages to the other replicas (each message's To is a replica
// id). Send must not block on the network: raft retries what is lost.
type Transport interface {
	Send(group uint64, msgs []*raftpb.Message)
}

// Config configures a Group.
type Config struct {
	Group   uint64 // the group's id: the shard's
	Replica uint64 // this replica's id, unique in the cluster and never reused
	Log     LogStore
	SM      StateMachine
	Net     Transport
	// Peers, for a group created here, are the replica ids of its first configuration
	// (this replica's included); a replica added to an existing group starts with none and
	// learns the configuration from the leader's log.
	Peers  []uint64
	Logger *zap.Logger
	// Tick is the interval of raft's logical clock (default 100ms); an election takes
	// ElectionTicks (default 10) without a heartbeat, heartbeats every HeartbeatTicks (1).
	Tick           time.Duration
	ElectionTicks  int
	HeartbeatTicks int
	// BeforeServe, when set, runs once this replica leads and has applied every entry
	// committed before its term, before it serves (store.DB.ReloadDerived); an error keeps
	// it from serving and makes it step down.
	BeforeServe func() error
	// CompactEvery is how many entries are applied between truncations of the log (default
	// 10,000); CompactKeep how many entries below the durable applied index a truncation
	// keeps (default 5,000), so that a follower a little behind catches up from the log
	// rather than from a snapshot.
	CompactEvery, CompactKeep uint64
	// OnChange, when set, is called (from the group's goroutine: it must not block) after
	// the replica starts or stops serving, or learns of another leader.
	OnChange func(Status)
}

// Status is what a replica knows of its group.
type Status struct {
	Group, Replica uint64
	Leader         uint64 // the leader's replica id, 0 when none is known
	Term           uint64
	Serving        bool // this replica leads and may serve reads and writes
	Applied        uint64
}

// Group is one replica of a group: a raft.RawNode driven by one goroutine.
type Group struct {
	cfg    Config
	log    *zap.Logger
	mu     sync.Mutex // guards rn
	rn     *raft.RawNode
	wake   chan struct{}
	stop   chan struct{}
	done   chan struct{}
	props  proposals
	reads  reads
	status atomic.Pointer[Status]
	// applied is the index of the last entry applied.
	applied     atomic.Uint64
	appliedTerm uint64 // the term of the entry at applied: the group's goroutine's own
	// servingTerm is the term this replica serves in, while it serves (the goroutine's).
	servingTerm uint64
	serving     atomic.Bool
	stopped     atomic.Bool
	// compacted is the applied index at the last truncation (the group's goroutine's own);
	// compacting is set while the compactor runs. conf is the configuration as of the last
	// configuration change applied, at index conf.index.
	compacted  uint64
	compacting atomic.Bool
	// savedTerm and savedVote are the hard state's last saved (the goroutine's own).
	savedTerm, savedVote uint64
	conf                 struct {
		sync.Mutex
		index uint64
		cs    *raftpb.ConfState
	}
}

// ErrStopped is returned by the operations of a stopped group.
var ErrStopped = errors.New("replica group stopped")

// Start starts a replica: it restores what the log and the state machine hold, bootstraps a
// new group with cfg.Peers when both are empty, and runs until Stop.
func Start(cfg Config) (*Group, error) {
	if cfg.Tick <= 0 {
		cfg.Tick = 100 * time.Millisecond
	}
	if cfg.ElectionTicks <= 0 {
		cfg.ElectionTicks = 10
	}
	if cfg.HeartbeatTicks <= 0 {
		cfg.HeartbeatTicks = 1
	}
	if cfg.CompactEvery == 0 {
		cfg.CompactEvery = 10_000
	}
	if cfg.CompactKeep == 0 {
		cfg.CompactKeep = 5_000
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	applied, appliedTerm, err := cfg.SM.ReplicaApplied()
	if err != nil {
		return nil, fmt.Errorf("replica %d of group %d: reading the applied state: %w", cfg.Replica, cfg.Group, err)
	}
	hs, cs, err := cfg.Log.InitialState()
	if err != nil {
		return nil, fmt.Errorf("replica %d of group %d: reading the log: %w", cfg.Replica, cfg.Group, err)
	}
	// A state installed from a snapshot may be ahead of the log's commit index until the
	// snapshot's own entry is saved: raft delivers from the commit index, and the state
	// machine skips what it holds already.
	rawApplied := min(applied, hs.GetCommit())
	if first, err := cfg.Log.FirstIndex(); err == nil && rawApplied+1 < first {
		return nil, fmt.Errorf("replica %d of group %d: the state machine applied up to %d but the log starts at %d",
			cfg.Replica, cfg.Group, applied, first)
	}
	log := cfg.Logger.With(zap.Uint64("group", cfg.Group), zap.Uint64("replica", cfg.Replica))
	g := &Group{cfg: cfg, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	g.props.init(cfg.Replica)
	g.applied.Store(applied)
	g.appliedTerm = appliedTerm
	g.compacted = applied
	g.savedTerm, g.savedVote = hs.GetTerm(), hs.GetVote()
	// The configuration read is the latest the log recorded, which a crash may have left
	// ahead of the state machine: it is the configuration as of the commit index at most,
	// and no snapshot is offered until then (groupStorage.Snapshot).
	g.conf.index, g.conf.cs = max(applied, hs.GetCommit()), proto.Clone(cs).(*raftpb.ConfState)
	g.status.Store(&Status{Group: cfg.Group, Replica: cfg.Replica, Applied: applied})
	rn, err := raft.NewRawNode(&raft.Config{
		ID: cfg.Replica, ElectionTick: cfg.ElectionTicks, HeartbeatTick: cfg.HeartbeatTicks,
		Storage: groupStorage{LogStore: cfg.Log, g: g}, Applied: rawApplied, MaxSizePerMsg: 1 << 20, MaxInflightMsgs: 256,
		MaxUncommittedEntriesSize: 1 << 30, CheckQuorum: true, PreVote: true, DisableProposalForwarding: true,
		Logger: raftLogger{log.Sugar().Named("raft")},
	})
	if err != nil {
		return nil, fmt.Errorf("replica %d of group %d: %w", cfg.Replica, cfg.Group, err)
	}
	if err := bootstrap(rn, cfg); err != nil {
		return nil, err
	}
	g.rn = rn
	go g.run()
	return g, nil
}

// bootstrap gives a new group its first configuration: only when the log is empty and peers
// are named (a replica added later learns it from the leader).
func bootstrap(rn *raft.RawNode, cfg Config) error {
	last, err := cfg.Log.LastIndex()
	if err != nil || last > 0 || len(cfg.Peers) == 0 {
		return err
	}
	hs, _, err := cfg.Log.InitialState()
	if err != nil || !raft.IsEmptyHardState(hs) {
		return err
	}
	peers := make([]raft.Peer, len(cfg.Peers))
	for i, id := range cfg.Peers {
		peers[i] = raft.Peer{ID: id}
	}
	if err := rn.Bootstrap(peers); err != nil {
		return fmt.Errorf("replica %d of group %d: bootstrap: %w", cfg.Replica, cfg.Group, err)
	}
	return nil
}

// Stop stops the replica's goroutine and fails what waits on it; it is idempotent.
func (g *Group) Stop() {
	if g.stopped.Swap(true) {
		return
	}
	close(g.stop)
	<-g.done
	g.props.failAll(ErrStopped)
}

// Status returns what the replica knows of its group.
func (g *Group) Status() Status { return *g.status.Load() }

// Serving reports whether this replica leads and serves.
func (g *Group) Serving() bool { return g.serving.Load() }

// Step hands the group a message another replica sent it.
func (g *Group) Step(m *raftpb.Message) {
	if g.stopped.Load() {
		return
	}
	g.mu.Lock()
	err := g.rn.Step(m)
	g.mu.Unlock()
	if err != nil && !errors.Is(err, raft.ErrStepPeerNotFound) && !errors.Is(err, raft.ErrStepLocalMsg) {
		g.log.Debug("raft refused a message", zap.Stringer("type", m.GetType()), zap.Uint64("from", m.GetFrom()), zap.Error(err))
	}
	g.kick()
}

// kick wakes the group's goroutine.
func (g *Group) kick() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// ReportUnreachable tells raft that a message to replica id could not be sent.
func (g *Group) ReportUnreachable(id uint64) {
	g.mu.Lock()
	g.rn.ReportUnreachable(id)
	g.mu.Unlock()
}

// ReportSnapshot tells the leader how sending a snapshot to replica to ended.
func (g *Group) ReportSnapshot(to uint64, failed bool) {
	status := raft.SnapshotFinish
	if failed {
		status = raft.SnapshotFailure
	}
	g.mu.Lock()
	g.rn.ReportSnapshot(to, status)
	g.mu.Unlock()
	g.kick()
}

// TransferLeadership asks the leader to hand leadership to replica to.
func (g *Group) TransferLeadership(to uint64) {
	g.mu.Lock()
	g.rn.TransferLeader(to)
	g.mu.Unlock()
	g.kick()
}

// Campaign makes this replica stand for election at once (a test's or a tool's nudge).
func (g *Group) Campaign() error {
	g.mu.Lock()
	err := g.rn.Campaign()
	g.mu.Unlock()
	g.kick()
	return err
}

// run is the replica's goroutine: ticks, and the Ready of every change.
func (g *Group) run() {
	defer close(g.done)
	t := time.NewTicker(g.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
			g.mu.Lock()
			g.rn.Tick()
			g.mu.Unlock()
		case <-g.wake:
		}
		g.issueReads()
		for g.handleReady() {
		}
	}
}

// raftLogger adapts zap to raft's Logger.
type raftLogger struct{ *zap.SugaredLogger }

func (l raftLogger) Warning(v ...any)                 { l.Warn(v...) }
func (l raftLogger) Warningf(format string, v ...any) { l.Warnf(format, v...) }

// Members returns the group's voters (both halves of a joint configuration) and learners as
// this replica knows them, each in increasing order.
func (g *Group) Members() (voters, learners []uint64) {
	g.mu.Lock()
	st := g.rn.Status()
	g.mu.Unlock()
	for id := range st.Config.Voters.IDs() {
		voters = append(voters, id)
	}
	for id := range st.Config.Learners {
		learners = append(learners, id)
	}
	slices.Sort(voters)
	slices.Sort(learners)
	return voters, learners
}

// Progress returns, on the leader, how far replica id's log is known to match the leader's
// and the leader's commit index (0 and false elsewhere, or for an unknown replica).
func (g *Group) Progress(id uint64) (match, commit uint64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.rn.Status()
	pr, ok := st.Progress[id]
	if !ok {
		return 0, 0, false
	}
	return pr.Match, st.GetCommit(), true
}
