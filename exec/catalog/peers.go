package catalog

import (
	"context"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Peers is the one way from this node to a shard another node serves (cluster mode; the
// shard's leader when it is replicated): every remote step is an internal command sent
// through it — a shard's part of a read (exec/query), of a write (exec/route's writes), an
// index build or drop (exec/ddl), a move's steps (exec/sharding), a change log's records
// (exec/changes), statistics and validation (exec/route). The package that sends a step owns
// its encoding, next to what the step does; exec/command/node answers it on the owner, which
// catches up with the router's catalog revision (every step carries it) and answers
// StaleConfig when its map of the shard differs. A shard of this node is never reached
// through Peers: it is a Shard (storage), read and written directly.
//
// The seam is a command rather than a method per step so that no package has to hold the
// others' types (a scan's plan, a write's results, a change batch), which would invert the
// layout, and so that what crosses between nodes is one value a test can read.
type Peers interface {
	// Command runs cmd on the node serving shard and returns its {ok: 1} reply; an {ok: 0}
	// reply is returned as its *mongoerr.Error, a shard with no leader at the moment as
	// StaleConfig (the router waits and plans again), a node that is down or does not answer
	// as HostUnreachable.
	Command(ctx context.Context, shard int, cmd bsoncore.Document) (bsoncore.Document, error)
}

// PinnedPeers is Peers that can send a step's later commands to the node that answered its
// first: a cursor (a read's part) lives on the node that opened it, which keeps serving it
// after another replica of the shard became its leader (as a mongod keeps its cursors across
// a stepdown, and mongos sends a cursor's getMores to the host it opened on). Sent to the
// shard's new leader, a getMore finds no such cursor.
type PinnedPeers interface {
	Peers
	// CommandPinned runs cmd on the node at host, or when host is "" as Command does, and
	// returns the host it ran on ("" when it was not sent).
	CommandPinned(ctx context.Context, shard int, host string, cmd bsoncore.Document) (bsoncore.Document, string, error)
}

// OtherNodes returns, for each other node holding partitions of ci, one of its shards
// (where the steps for that node go), in partition order.
func (c *Catalog) OtherNodes(ci *Coll) []int {
	all := c.Shards()
	var nodes []string
	var shards []int
	for i := range ci.Map.Len() {
		s := ci.Map.Partition(i).Shard
		if node, remote := all[s].Node(); remote && !slices.Contains(nodes, node) {
			nodes = append(nodes, node)
			shards = append(shards, s)
		}
	}
	return shards
}

// Broadcast runs cmd through p on every other node holding partitions of ci, in parallel;
// use, when not nil, is given each reply (concurrently). The first failure in shard order
// is returned.
func (c *Catalog) Broadcast(ctx context.Context, p Peers, ci *Coll, cmd bsoncore.Document, use func(bsoncore.Document)) error {
	shards := c.OtherNodes(ci)
	errs := make([]error, len(shards))
	var wg sync.WaitGroup
	for i, s := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reply, err := p.Command(ctx, s, cmd)
			if err == nil && use != nil {
				use(reply)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
