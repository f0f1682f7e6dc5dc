package command

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/params"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The cluster-wide default read and write concerns (exec/params/rwdefaults.go): kept as a
// shared setting of the partition manager (config.settings on one node, etcd in a
// cluster), loaded at start, and published in RWDefaults for the command path, which
// applies them to the commands that carry no concern of their own (exec/write_concern.go).
// In cluster mode the node that changes them pushes the change to every other node up
// (RWDefaultsCommand) before it answers, so that a command through any node after
// setDefaultRWConcern returned runs under the new defaults. A node the push did not reach
// (down, or unreachable for pushWait) reads the cluster's copy again when a command uses its
// copy and that copy is older than rwDefaultsRefresh (in the background: the command goes
// on with the copy it has), and at every getDefaultRWConcern, so that it applies them within
// about that long.

// rwDefaultsRefresh is how old a cluster node's copy of the defaults may get before a
// command that uses it has it read again.
const rwDefaultsRefresh = time.Second

// rwDefaultsState serializes the changes of the defaults and the refreshes in the
// background.
type rwDefaultsState struct {
	mu         sync.Mutex // held while a change is written
	refreshing sync.Mutex // TryLock: one refresh in the background at a time
}

// LoadRWDefaults reads the defaults as the cluster holds them and applies them from now on.
func (e *Server) LoadRWDefaults(ctx context.Context) error {
	if e.Shards == nil {
		return nil
	}
	doc, err := e.Shards.SharedSetting(ctx, params.RWDefaultsID)
	if err != nil {
		return sharding.MoveError(err) // ErrShutdown: InterruptedAtShutdown
	}
	e.RWDefaults.StoreNewer(params.ParseRWDefaults(doc))
	return nil
}

// CurrentRWDefaults returns the defaults the command path applies now. In cluster mode a
// copy older than rwDefaultsRefresh is read again in the background.
func (e *Server) CurrentRWDefaults() *params.RWConcernDefaults {
	cur := e.RWDefaults.Load()
	if e.Storage.Cluster == nil || time.Since(e.RWDefaults.LocalUpdate()) < rwDefaultsRefresh {
		return cur
	}
	if e.rwState.refreshing.TryLock() {
		go func() {
			defer e.rwState.refreshing.Unlock()
			select {
			case <-e.stop: // shutting down: the stores may be closing
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := e.LoadRWDefaults(ctx); err != nil && !errors.Is(err, sharding.ErrShutdown) {
				e.Log.Warn("cannot read the default read and write concerns", zap.Error(err))
			}
		}()
	}
	return cur
}

// SetRWDefaults runs setDefaultRWConcern's change: the defaults as the cluster holds them,
// changed by rc and wc (nil: absent; params.NextRWDefaults), written for every node and
// applied here from now on.
func (e *Server) SetRWDefaults(ctx context.Context, rc, wc bsoncore.Document) (*params.RWConcernDefaults, error) {
	e.rwState.mu.Lock()
	defer e.rwState.mu.Unlock()
	if err := e.LoadRWDefaults(ctx); err != nil {
		return nil, err
	}
	next, err := params.NextRWDefaults(e.RWDefaults.Load(), rc, wc, e.Clock.Tick(), time.Now())
	if err != nil {
		return nil, err
	}
	if err := e.satisfiableDefault(next.WriteConcern); err != nil {
		return nil, err
	}
	if err := e.Shards.PutSharedSetting(ctx, next.ToDoc()); err != nil {
		return nil, err
	}
	e.RWDefaults.Store(next)
	e.Log.Info("Successfully set RWC defaults", zap.Stringer("value", next.ToDoc()))
	e.pushRWDefaults(ctx, next.ToDoc())
	return next, nil
}

// RWDefaultsCommand is the internal command that gives a node the defaults another node
// just set: {_cleaveRWDefaults: <the config.settings document>}. The node applies them
// unless it already applies newer ones (params.RWDefaults.StoreNewer).
const RWDefaultsCommand = "_cleaveRWDefaults"

// pushWait bounds how long setDefaultRWConcern waits for the other nodes to take the new
// defaults; one that does not answer in time reads them within rwDefaultsRefresh of its next
// command.
const pushWait = 5 * time.Second

// clusterMembers is what pushing the defaults needs of the node's cluster (cmd/cleave's
// view): every node up, name → advertised address.
type clusterMembers interface {
	BackupMembers() map[string]string
}

// pushRWDefaults gives doc, the defaults just set, to every other node of the cluster up,
// at once, and waits for their answers (at most pushWait); a node that fails is logged.
func (e *Server) pushRWDefaults(ctx context.Context, doc bsoncore.Document) {
	cm, ok := e.Storage.Cluster.(clusterMembers)
	if !ok || e.Remote == nil {
		return
	}
	cmd := bsoncore.NewDocumentBuilder().AppendDocument(RWDefaultsCommand, doc).AppendString("$db", "admin").Build()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), pushWait)
	defer cancel()
	self := e.Storage.Cluster.NodeName()
	var wg sync.WaitGroup
	for name, addr := range cm.BackupMembers() {
		if name == self {
			continue
		}
		wg.Go(func() {
			if _, err := e.Remote.NodeCommand(ctx, addr, cmd); err != nil {
				e.Log.Warn("cannot give a node the new default read and write concerns: it reads them within a second of its next command",
					zap.String("node", name), zap.Error(err))
			}
		})
	}
	wg.Wait()
}

// TakeRWDefaults applies doc, the defaults another node set (RWDefaultsCommand), unless this
// node applies newer ones.
func (e *Server) TakeRWDefaults(doc bsoncore.Document) {
	// The defaults keep sub-slices of doc, which is the request's body: the connection reads
	// its next message into the same buffer.
	e.RWDefaults.StoreNewer(params.ParseRWDefaults(slices.Clone(doc)))
}

// satisfiableDefault refuses a default write concern the shards' copies can never satisfy,
// as a replica set refuses it (validateWriteConcern): more copies than each shard keeps
// (one without replication) with UnsatisfiableWriteConcern, a tag other than "majority"
// with UnknownReplWriteConcern. Otherwise every write would answer a writeConcernError.
func (e *Server) satisfiableDefault(wc bsoncore.Document) error {
	w := wc.Lookup("w")
	if tag, ok := w.StringValueOK(); ok && tag != "majority" {
		return mongoerr.New(mongoerr.UnknownReplWriteConcern, "No write concern mode named '%s' found in replica set configuration", tag)
	}
	copies := int64(1)
	if reps := e.Storage.Replicas; reps != nil {
		copies = int64(reps.Copies())
	}
	if n, ok := w.AsInt64OK(); ok && n > copies {
		return mongoerr.New(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes")
	}
	return nil
}
