package replica

import (
	"context"
	"fmt"
)

// Consistency checks. The leader proposes a checksum entry; every replica, when it applies
// it, digests its state as of that entry (Checksummer.ChecksumAt: a snapshot taken in the
// apply loop, digested in the background), so that the digests of all replicas describe the
// same applied index whatever writes follow, and can be compared (replica/host does, and
// reports a divergence loudly).

// checksumFlag marks a proposal's sequence number as a checksum entry's (sequence numbers
// never reach it).
const checksumFlag = 1 << 63

// Checksummer is a state machine that digests itself at an entry's index.
type Checksummer interface {
	// ChecksumAt starts a digest of the state as of index (every entry up to it applied,
	// none after): called from the apply loop, it must not block on the digest itself.
	ChecksumAt(index uint64)
}

// ProposeChecksum proposes a checksum entry and returns its index once it is applied here
// (this replica's digest at that index has started).
func (g *Group) ProposeChecksum(ctx context.Context) (uint64, error) {
	if _, ok := g.cfg.SM.(Checksummer); !ok {
		return 0, fmt.Errorf("the state machine of group %d keeps no digests", g.cfg.Group)
	}
	if !g.serving.Load() {
		return 0, errNotLeader(g.cfg.Group, g.Status().Leader)
	}
	seq, ch := g.props.add()
	g.mu.Lock()
	err := g.rn.Propose(encodeProposal(g.cfg.Replica, seq|checksumFlag, nil))
	g.mu.Unlock()
	if err != nil {
		g.props.remove(seq)
		return 0, errNotLeader(g.cfg.Group, g.Status().Leader)
	}
	g.kick()
	if err := g.wait(ctx, seq, ch); err != nil {
		return 0, err
	}
	return g.props.indexOf(seq), nil
}

// noteChecksum starts the state machine's digest at a checksum entry's index.
func (g *Group) noteChecksum(index uint64) {
	if c, ok := g.cfg.SM.(Checksummer); ok {
		c.ChecksumAt(index)
	}
}
