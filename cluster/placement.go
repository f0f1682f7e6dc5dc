package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
)

// Placement is which node owns a shard: the record /shards/<id>. Shard ids are cluster-wide
// (a partition map names them), allocated once and never reused; a node finds its shards
// again by its name when it restarts.
type Placement struct {
	Node string `json:"node"`
	// Draining marks a shard being emptied (removeShard): the partition manager moves its
	// partitions away and places none on it. It stays set once the shard is empty.
	Draining bool `json:"draining,omitempty"`
	// Zones are the shard's zones (addShardToZone), which the partition manager places zone
	// ranges by; nil for a shard never given one, empty once its last was taken away
	// (config.shards keeps showing its empty tags then, as MongoDB's does).
	Zones *[]string `json:"zones,omitempty"`
	// Replicas are the copies of a replicated shard (replicas.go); empty for a single copy,
	// which is the node's own store.
	Replicas []Replica `json:"replicas,omitempty"`
}

// maxShardAllocTries bounds the retries of a shard allocation that raced with another node's.
const maxShardAllocTries = 64

// assignShards returns the ids of the node's first n shards, in increasing order (local store
// k is shard ids[k]), allocating the missing ones: each new id is the next unused one, taken
// by a transaction that succeeds only if no node took it first. A node that owns more than n
// shards is refused, as a restart with fewer --shards is on one node.
func (n *Node) assignShards(ctx context.Context, want int) ([]int, error) {
	for try := 0; try < maxShardAllocTries; try++ {
		all, err := n.readPlacement(ctx)
		if err != nil {
			return nil, err
		}
		var mine []int
		next := 0
		for id, p := range all {
			if p.Node == n.opts.NodeName {
				mine = append(mine, id)
			}
			next = max(next, id+1)
		}
		slices.Sort(mine)
		if len(mine) > want {
			return nil, fmt.Errorf("node %s owns %d shards in the cluster: start it with --shards %d or more",
				n.opts.NodeName, len(mine), len(mine))
		}
		if len(mine) == want {
			return mine, nil
		}
		p := Placement{Node: n.opts.NodeName}
		if n.opts.Replicated {
			// A new shard starts as a group of one, on this node; its leader adds the others.
			rid, err := n.AllocReplicaID(ctx)
			if err != nil {
				return nil, err
			}
			p.Replicas = []Replica{{ID: rid, Node: n.opts.NodeName}}
		}
		v, _ := json.Marshal(p)
		key := n.opts.key("shards", strconv.Itoa(next))
		resp, err := n.cli.Txn(ctx).If(createdAbsent(key)).Then(opPut(key, string(v))).Commit()
		if err != nil {
			return nil, fmt.Errorf("cannot allocate a shard: %w", err)
		}
		if resp.Succeeded {
			n.log.Info("allocated a shard", zap.Int("shard", next), zap.String("node", n.opts.NodeName))
		}
	}
	return nil, fmt.Errorf("cannot allocate shards: %d attempts raced with other nodes", maxShardAllocTries)
}

// readPlacement reads every shard's placement from etcd.
func (n *Node) readPlacement(ctx context.Context) (map[int]Placement, error) {
	resp, err := n.cli.Get(ctx, n.opts.key("shards")+"/", withPrefix())
	if err != nil {
		return nil, fmt.Errorf("cannot read the cluster's shards: %w", err)
	}
	out := map[int]Placement{}
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), leaderSuffix) {
			continue
		}
		id, err := strconv.Atoi(string(kv.Key[len(n.opts.key("shards"))+1:]))
		var p Placement
		if err != nil || id < 0 || json.Unmarshal(kv.Value, &p) != nil {
			return nil, fmt.Errorf("corrupt shard record %q", kv.Key)
		}
		out[id] = p
	}
	return out, nil
}

// Placement returns every shard's owner, from the cached view (never waits on etcd). The
// map is shared by every caller until the next change: never modify it.
func (n *Node) Placement() map[int]Placement { return n.decodedShards().placed }

// decodedShards returns /shards/ decoded, once per change of the mirror: routers ask for a
// shard's owner on every request, and decoding each record every time took a sixth of a
// router's CPU (scripts/bench-replicas.sh).
func (n *Node) decodedShards() *shardsView {
	ver := n.shards.version()
	if v := n.shardsView.Load(); v != nil && v.ver == ver {
		return v
	}
	v := &shardsView{ver: ver, placed: map[int]Placement{}, leaders: map[int]LeaderRecord{}}
	for k, raw := range n.shards.snapshot() {
		if s, ok := strings.CutSuffix(k, leaderSuffix); ok {
			id, err := strconv.Atoi(s)
			var r LeaderRecord
			if err == nil && json.Unmarshal(raw, &r) == nil {
				v.leaders[id] = r
			}
			continue
		}
		id, err := strconv.Atoi(k)
		var p Placement
		if err == nil && json.Unmarshal(raw, &p) == nil {
			v.placed[id] = p
		}
	}
	n.shardsView.Store(v)
	return v
}

// shardsView is /shards/ decoded at one version of its mirror.
type shardsView struct {
	ver     uint64
	placed  map[int]Placement
	leaders map[int]LeaderRecord
}

// PlacementChanged returns a channel closed at the next change of the shard placement.
func (n *Node) PlacementChanged() <-chan struct{} { return n.shards.changed() }

// SetDraining marks shard id as draining, in one transaction conditioned on the shard's
// record being the one read (a placement a concurrent change rewrote is read again).
func (n *Node) SetDraining(ctx context.Context, id int) error {
	var node string
	changed := false
	err := n.UpdatePlacement(ctx, id, func(p *Placement) bool {
		node, changed = p.Node, !p.Draining
		p.Draining = true
		return changed
	})
	if err == nil && changed {
		n.log.Info("shard draining", zap.Int("shard", id), zap.String("node", node))
	}
	return err
}

// SetShardZone adds zone to shard id's zones (add) or takes it away, in one transaction
// conditioned on the shard's record being the one read. Adding a zone the shard has, or taking
// one it has not, changes nothing.
func (n *Node) SetShardZone(ctx context.Context, id int, zone string, add bool) error {
	changed := false
	err := n.UpdatePlacement(ctx, id, func(p *Placement) bool {
		var zones []string
		if p.Zones != nil {
			zones = slices.Clone(*p.Zones)
		}
		has := slices.Contains(zones, zone)
		switch {
		case add && !has:
			zones = append(zones, zone)
		case !add && has:
			zones = slices.DeleteFunc(zones, func(z string) bool { return z == zone })
		default:
			return false
		}
		if zones == nil {
			zones = []string{}
		}
		p.Zones, changed = &zones, true
		return true
	})
	if err == nil && changed {
		n.log.Info("shard zones changed", zap.Int("shard", id), zap.String("zone", zone), zap.Bool("add", add))
	}
	return err
}
