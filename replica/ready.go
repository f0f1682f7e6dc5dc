package replica

import (
	"go.etcd.io/raft/v3"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"
)

// handleReady persists, sends and applies one Ready, and reports whether there was one.
//
// The order is raft's: entries and hard state are synced to the log before the messages that
// announce them leave (a vote or an acknowledgement must survive a crash), and committed
// entries are applied in index order. RawNode is not safe for concurrent use: the mutex is
// held around each call into it, not around the disk writes, so that messages from other
// replicas and proposals are stepped while a Ready is being persisted.
func (g *Group) handleReady() bool {
	g.mu.Lock()
	if !g.rn.HasReady() {
		g.mu.Unlock()
		return false
	}
	rd := g.rn.Ready()
	leads := g.rn.BasicStatus().RaftState == raft.StateLeader
	g.mu.Unlock()
	// A leader sends its appends before it syncs them itself, so that its fsync and its
	// followers' overlap (raft's thesis, 10.2.1; etcd does the same): it counts its own
	// copy only once Advance says it is stable. Not when the Ready changes the term or a
	// vote, which must be durable before anything announces them.
	sendFirst := leads && len(rd.Messages) > 0 &&
		(raft.IsEmptyHardState(rd.HardState) || rd.GetTerm() == g.savedTerm && rd.GetVote() == g.savedVote)
	if sendFirst {
		g.cfg.Net.Send(g.cfg.Group, rd.Messages)
	}
	if !raft.IsEmptySnap(rd.Snapshot) {
		// The state comes first: once the log records the snapshot, its entries are gone.
		meta := rd.Snapshot.GetMetadata()
		if err := g.cfg.SM.InstallSnapshot(meta); err != nil {
			g.log.Fatal("cannot install a snapshot: stopping the server", zap.Uint64("index", meta.GetIndex()), zap.Error(err))
		}
		applied, term, err := g.cfg.SM.ReplicaApplied()
		if err != nil {
			g.log.Fatal("cannot read the applied state of an installed snapshot", zap.Error(err))
		}
		g.applied.Store(applied)
		g.appliedTerm, g.compacted = term, applied
		g.conf.Lock()
		g.conf.index, g.conf.cs = meta.GetIndex(), proto.Clone(meta.GetConfState()).(*raftpb.ConfState)
		g.conf.Unlock()
		g.log.Info("installed a snapshot", zap.Uint64("index", meta.GetIndex()), zap.Uint64("applied", applied))
	}
	if err := g.cfg.Log.Save(rd.HardState, rd.Entries, rd.Snapshot); err != nil {
		// Fail-stop, as for a failed WAL write: a replica that cannot persist its log must not
		// vote or acknowledge anything again.
		g.log.Fatal("cannot persist the raft log: stopping the server", zap.Error(err))
	}
	if !raft.IsEmptyHardState(rd.HardState) {
		g.savedTerm, g.savedVote = rd.GetTerm(), rd.GetVote()
	}
	if len(rd.Messages) > 0 && !sendFirst {
		g.cfg.Net.Send(g.cfg.Group, rd.Messages)
	}
	g.readStates(rd.ReadStates)
	var done []uint64
	for _, e := range rd.CommittedEntries {
		if seq, mine := g.apply(e); mine {
			done = append(done, seq)
		}
	}
	g.releaseReads()
	g.mu.Lock()
	g.rn.Advance(rd)
	bs := g.rn.BasicStatus()
	g.mu.Unlock()
	// Proposers are answered once raft knows their entries applied: a configuration change
	// proposed right after another is refused while raft still counts the first pending.
	for _, seq := range done {
		g.props.done(seq, nil)
	}
	g.updateStatus(bs)
	g.maybeCompact()
	return true
}

// apply applies one committed entry and returns its proposal's sequence number when this
// replica proposed it.
func (g *Group) apply(e *raftpb.Entry) (seq uint64, mine bool) {
	var owner uint64
	var payload []byte
	switch e.GetType() {
	case raftpb.EntryNormal:
		owner, seq, payload = decodeProposal(e.GetData())
	case raftpb.EntryConfChange, raftpb.EntryConfChangeV2:
		owner, seq = g.applyConfChange(e)
	}
	if err := g.cfg.SM.ApplyReplicated(e.GetIndex(), e.GetTerm(), payload); err != nil {
		g.log.Fatal("cannot apply a committed entry: stopping the server", zap.Uint64("index", e.GetIndex()), zap.Error(err))
	}
	if e.GetIndex() > g.applied.Load() { // entries below a snapshot's state are skipped
		g.applied.Store(e.GetIndex())
		g.appliedTerm = e.GetTerm()
		if seq&checksumFlag != 0 {
			g.noteChecksum(e.GetIndex())
		}
	}
	seq &^= checksumFlag
	mine = owner == g.cfg.Replica
	if mine {
		g.props.setIndex(seq, e.GetIndex())
	}
	return seq, mine
}

// applyConfChange applies a configuration change entry and returns its proposer.
func (g *Group) applyConfChange(e *raftpb.Entry) (owner, seq uint64) {
	var cc raftpb.ConfChangeI
	if e.GetType() == raftpb.EntryConfChange {
		cc = new(raftpb.ConfChange)
	} else {
		cc = new(raftpb.ConfChangeV2)
	}
	if err := proto.Unmarshal(e.GetData(), cc.(proto.Message)); err != nil {
		g.log.Fatal("corrupt configuration change entry", zap.Uint64("index", e.GetIndex()), zap.Error(err))
	}
	g.mu.Lock()
	cs := g.rn.ApplyConfChange(cc)
	g.mu.Unlock()
	if err := g.cfg.Log.SetConfState(cs); err != nil {
		g.log.Fatal("cannot persist the group's configuration", zap.Error(err))
	}
	g.conf.Lock()
	g.conf.index, g.conf.cs = e.GetIndex(), proto.Clone(cs).(*raftpb.ConfState)
	g.conf.Unlock()
	g.log.Info("group configuration changed", zap.Uint64s("voters", cs.GetVoters()), zap.Uint64s("learners", cs.GetLearners()),
		zap.Uint64("index", e.GetIndex()))
	owner, seq, _ = decodeProposal(cc.AsV2().GetContext())
	return owner, seq
}

// updateStatus publishes the replica's view after a Ready: it starts serving once it leads
// and has applied an entry of its own term, and stops (failing what waits) once it does not
// lead.
//
// A replica that leads again in a later term (deposed and elected again between two Readys)
// stops serving too, until it has applied an entry of that term: its reads of the earlier
// term died with it, and entries another leader committed meanwhile may not be applied yet.
func (g *Group) updateStatus(bs raft.BasicStatus) {
	leads := bs.RaftState == raft.StateLeader && (!g.serving.Load() || bs.GetTerm() == g.servingTerm)
	g.dropReads(leads, bs.GetTerm())
	changed := false
	switch {
	case !leads && g.serving.Load():
		g.serving.Store(false)
		g.props.failAll(errLeadershipLost(g.cfg.Group))
		g.log.Info("stopped serving: no longer the leader", zap.Uint64("term", bs.GetTerm()), zap.Uint64("leader", bs.Lead))
		changed = true
	case leads && !g.serving.Load() && g.appliedTerm == bs.GetTerm():
		if g.cfg.BeforeServe != nil {
			if err := g.cfg.BeforeServe(); err != nil {
				g.log.Error("cannot start serving: stepping down", zap.Error(err))
				g.stepDown(bs)
				return
			}
		}
		g.servingTerm = bs.GetTerm()
		g.serving.Store(true)
		g.log.Info("serving as the group's leader", zap.Uint64("term", bs.GetTerm()), zap.Uint64("applied", g.applied.Load()))
		changed = true
	}
	old := g.status.Load()
	st := Status{Group: g.cfg.Group, Replica: g.cfg.Replica, Leader: bs.Lead, Term: bs.GetTerm(),
		Serving: g.serving.Load(), Applied: g.applied.Load()}
	g.status.Store(&st)
	if (changed || old.Leader != st.Leader || old.Term != st.Term) && g.cfg.OnChange != nil {
		g.cfg.OnChange(st)
	}
}

// stepDown hands leadership to the most caught-up other voter, if any.
func (g *Group) stepDown(bs raft.BasicStatus) {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.rn.Status()
	var best, match uint64
	for id, pr := range st.Progress {
		if id != g.cfg.Replica && !pr.IsLearner && pr.Match >= match {
			best, match = id, pr.Match
		}
	}
	if best != 0 && bs.RaftState == raft.StateLeader {
		g.rn.TransferLeader(best)
	}
}
