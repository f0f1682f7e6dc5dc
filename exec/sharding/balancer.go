package sharding

import (
	"bytes"
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The balancer's switch (balancerStop, balancerStart; mongosh's sh.stopBalancer() and
// sh.getBalancerState()). As on MongoDB it is the document {_id: "balancer", mode, stopped}
// of config.settings, a real collection: the commands write it, a user may write it too (as
// older shells stopped the balancer), and a restart keeps it. While it says off, the
// partition manager moves nothing on its own: no balancing of bytes or load, no draining, and
// a load split keeps its right child on its shard. Splits go on (a partition above its size
// or throughput must split), and moveChunk still moves, as on MongoDB. In cluster mode the
// switch is the cluster's (Cluster.Setting, in etcd), since each node's config database is
// its own: balancerStop and balancerStart on any node write it there, every node's manager
// reads it at each round and mirrors it into its own config.settings (so that mongosh's
// sh.getBalancerState() reads it on any node), and only the elected manager, which alone
// moves, acts on it; balancerStop waits for that manager's round in progress, wherever it
// runs. A write of config.settings by hand stays on the node it was sent to.

const balancerID = "balancer"

// BalancerOn reports whether the balancer runs: config.settings has no balancer document,
// or one whose mode is not "off" and which is not stopped.
func (m *Manager) BalancerOn() bool {
	doc, err := m.balancerSetting()
	if err != nil || doc == nil {
		return true
	}
	if v, err := doc.LookupErr("mode"); err == nil {
		if s, ok := v.StringValueOK(); ok && s == "off" {
			return false
		}
	}
	if v, err := doc.LookupErr("stopped"); err == nil {
		if b, ok := v.BooleanOK(); ok && b {
			return false
		}
	}
	return true
}

// balancerSetting returns the balancer's document: config.settings' on a single node, the
// cluster's in cluster mode (mirrored into this node's config.settings when it differs). When
// the cluster's cannot be read, the mirror is the last one known.
func (m *Manager) balancerSetting() (bsoncore.Document, error) {
	c := m.mopts.Cluster
	if c == nil {
		return m.balancerDoc()
	}
	// A manager round reads it: briefly, and never past the manager's life (Close waits for
	// the round), so that an unreachable etcd slows neither rounds nor shutdown.
	ctx, cancel := context.WithTimeout(m.life, settingReadWait)
	defer cancel()
	raw, err := c.Setting(ctx, balancerID)
	if err != nil {
		m.log.Warn("cannot read the cluster's balancer setting: using this node's copy", zap.Error(err))
		return m.balancerDoc()
	}
	if raw == nil {
		return nil, nil
	}
	doc := bsoncore.Document(raw)
	if local, err := m.balancerDoc(); err == nil && !bytes.Equal(local, doc) {
		if err := m.putBalancerDoc(doc); err != nil {
			m.log.Warn("cannot mirror the cluster's balancer setting", zap.Error(err))
		}
	}
	return doc, nil
}

// balancerDoc returns config.settings' balancer document, or nil.
func (m *Manager) balancerDoc() (bsoncore.Document, error) { return m.settingDoc(balancerID) }

// SetBalancer writes the balancer's switch into config.settings, synced. Turning it off
// then waits for the manager round in progress, so that no balancing move starts after it
// returns (MongoDB's balancerStop waits for its balancer round too); a move that round
// started runs to its end first.
func (m *Manager) SetBalancer(on bool) error {
	mode := "off"
	if on {
		mode = "full"
	}
	doc := bsoncore.NewDocumentBuilder().AppendString("_id", balancerID).AppendString("mode", mode).
		AppendBoolean("stopped", !on).Build()
	if c := m.mopts.Cluster; c != nil {
		ctx, cancel := context.WithTimeout(m.life, settingWriteWait)
		err := c.PutSetting(ctx, balancerID, doc)
		cancel()
		if err != nil {
			return mongoerr.Wrap(err, mongoerr.HostUnreachable, "cannot write the balancer's setting to the cluster's metadata: %v", err)
		}
	}
	if err := m.putBalancerDoc(doc); err != nil {
		return err
	}
	if !on {
		return m.waitManagerRound()
	}
	return nil
}

// How long the balancer's shared setting is waited for in etcd: a manager round's read, and
// balancerStop's or balancerStart's write.
const (
	settingReadWait  = 2 * time.Second
	settingWriteWait = 10 * time.Second
)

// BalancerRoundCmd asks a node to answer once its manager round in progress has ended
// (balancerStop sent to a node other than the elected manager).
const BalancerRoundCmd = "_cleaveBalancerRound"

// balancerRoundWait bounds how long balancerStop waits for the elected manager's round.
const balancerRoundWait = 2 * time.Minute

// waitManagerRound waits for the round in progress of the manager that moves partitions:
// this node's, or in a cluster the elected one's, asked through one of its node's shards.
func (m *Manager) waitManagerRound() error {
	c := m.mopts.Cluster
	if c == nil || c.Leader() {
		m.WaitRound()
		return nil
	}
	ctx, cancel := context.WithTimeout(m.life, settingWriteWait)
	name, err := c.ManagerNode(ctx)
	cancel()
	if err != nil || name == "" {
		return err // none elected: no round in progress anywhere
	}
	for s := range m.cat.Shards() {
		if node, host := c.ShardHost(s); node == name && host != "" {
			cmd := bsoncore.NewDocumentBuilder().AppendInt32(BalancerRoundCmd, 1).AppendString("$db", "admin").Build()
			_, err := m.peerCommandWithin(s, cmd, balancerRoundWait)
			return err
		}
	}
	return nil
}

// WaitRound returns once this node's manager round in progress, if any, has ended.
func (m *Manager) WaitRound() {
	m.round.Lock()
	m.round.Unlock() //nolint:staticcheck // an empty critical section: waits for the round in progress
}

// putBalancerDoc replaces (or inserts) config.settings' balancer document with doc.
func (m *Manager) putBalancerDoc(doc bsoncore.Document) error { return m.putSettingDoc(doc) }
