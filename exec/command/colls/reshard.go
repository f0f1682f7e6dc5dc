package colls

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/collation"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The layout changes (exec/sharding/reshard.go runs them): reshardCollection,
// moveCollection and unshardCollection answer when the change is done, as MongoDB's do;
// abortReshardCollection and commitReshardCollection steer one in flight; currentOp shows
// its progress.

// addReshardCommands registers the layout-change commands.
func (h *Handlers) addReshardCommands(add func(*command.Command)) {
	add(&command.Command{Name: "reshardCollection", Run: h.reshardCollection, Action: auth.ActionClusterAdmin, Help: "change a sharded collection's shard key online", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "abortReshardCollection", Run: h.steerReshard(false), Action: auth.ActionClusterAdmin, Help: "abort the layout change of a collection", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "commitReshardCollection", Run: h.steerReshard(true), Action: auth.ActionClusterAdmin, Help: "make the layout change of a collection block writes and finish now", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "moveCollection", Run: h.moveCollection, Action: auth.ActionClusterAdmin, Help: "move an unsharded collection to a shard online", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "unshardCollection", Run: h.unshardCollection, Action: auth.ActionClusterAdmin, Help: "make a sharded collection one partition on a shard, online", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "analyzeShardKey", Run: h.analyzeShardKey, Action: auth.ActionClusterAdmin, Help: "cardinality, frequency and monotonicity of a shard key from a sample", AdminOnly: true})
	h.BackgroundOps = h.Shards.ReshardOps
}

// reshardArgs are reshardCollection's arguments.
type reshardArgs struct {
	ns, db, coll string
	key          bsoncore.Document
	unique       bool
	chunks       int64
	force        bool
}

// parseReshard parses {reshardCollection: ns, key, unique?, numInitialChunks?, collation?,
// zones?, forceRedistribution?, shardDistribution?, reshardingUUID?}.
func parseReshard(body bsoncore.Document) (*reshardArgs, error) {
	const cmd = "reshardCollection"
	a := &reshardArgs{}
	first, _ := bsonx.FirstElement(body)
	var err error
	if a.ns, err = args.String(cmd, cmd, first.Value()); err != nil {
		return nil, err
	}
	if a.db, a.coll, err = parseNamespace(a.ns); err != nil {
		return nil, err
	}
	err = args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "key":
			a.key, err = args.Doc(cmd, key, v)
		case "unique":
			a.unique, err = args.Bool(cmd, key, v)
		case "numInitialChunks":
			a.chunks, err = args.Int64(cmd, key, v)
			if err == nil && (a.chunks < 0 || a.chunks > 8192) {
				err = mongoerr.New(mongoerr.InvalidOptions, "numInitialChunks cannot be more than either: 8192, 8192 * number of shards; or 1000000")
			}
		case "forceRedistribution":
			a.force, err = args.Bool(cmd, key, v)
		case "collation":
			err = simpleCollation(cmd, key, v)
		case "zones", "shardDistribution":
			if arr, ok := v.ArrayOK(); ok {
				if vals, _ := arr.Values(); len(vals) > 0 {
					err = mongoerr.New(mongoerr.NotImplemented, "%s is not supported by cleave: partitions spread evenly over the shards", key)
				}
			}
		case "reshardingUUID", "implicitlyCreateIndex", "demoMode":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if a.key == nil {
		return nil, args.Missing(cmd, "key")
	}
	a.key = append(bsoncore.Document(nil), a.key...) // the body aliases the read buffer
	return a, nil
}

// simpleCollation accepts only the simple collation: the shard key's placement compares raw
// values.
func simpleCollation(cmd, key string, v bsoncore.Value) error {
	d, err := args.Doc(cmd, key, v)
	if err != nil {
		return err
	}
	if c, err := collation.Parse(d); err != nil || c != nil {
		if err != nil {
			return err
		}
		return mongoerr.New(mongoerr.BadValue, "The collation for %s must be {locale: 'simple'}, but found: %s", cmd, bsonx.ShellString(v))
	}
	return nil
}

// reshardCollection runs {reshardCollection: ns, key, ...}: the collection is copied into
// the layout of the new key while writes go on, then swapped in. The same key again is a
// no-op unless forceRedistribution is set (MongoDB 7.2's way of spreading a collection anew).
func (h *Handlers) reshardCollection(_ context.Context, r *command.Request) error {
	a, err := parseReshard(r.Body)
	if err != nil {
		return err
	}
	if err := validateShardKey(a.key); err != nil {
		return err
	}
	if a.unique {
		return mongoerr.New(mongoerr.InvalidOptions, "hashed shard keys cannot be declared unique. It's possible to ensure uniqueness on the hashed field by declaring an additional (non-hashed) unique index on the field.")
	}
	c, err := h.layoutSource(r.Name, a.db, a.coll)
	if err != nil {
		return err
	}
	if !c.Sharded() {
		return mongoerr.New(mongoerr.NamespaceNotSharded, "Collection %s is not sharded.", a.ns)
	}
	if equalKeys(c.ShardKey, a.key) && !a.force {
		return nil // MongoDB answers ok without copying anything
	}
	return h.runLayoutChange(r, sharding.ReshardSpec{DB: a.db, Coll: a.coll, Key: a.key,
		NumInitialChunks: int(a.chunks), Shards: h.placementShards()})
}

// moveCollection runs {moveCollection: ns, toShard}: an unsharded collection moves to the
// shard named.
func (h *Handlers) moveCollection(_ context.Context, r *command.Request) error {
	db, coll, to, err := h.parseLayoutTarget(r, true)
	if err != nil {
		return err
	}
	c, err := h.layoutCollection(r.Name, db, coll)
	if err != nil {
		return err
	}
	if c.Sharded() {
		return mongoerr.New(mongoerr.NamespaceNotFound, "Collection %s.%s is sharded: moveCollection moves unsharded collections (unshardCollection makes it one first)", db, coll)
	}
	if c.Partitions[0].Shard == to {
		return nil
	}
	if h.Remote != nil {
		// In a cluster the collection's one partition moves as moveChunk moves one: its
		// owner's node copies it to the destination's node while writes go on, catches up,
		// then flips the ownership in one etcd transaction (exec/sharding/move_remote.go).
		return sharding.MoveError(h.Shards.MovePartition(db, coll, c.Partitions[0].ID, to, "moveCollection"))
	}
	return h.runLayoutChange(r, sharding.ReshardSpec{DB: db, Coll: coll, Shards: []int{to}})
}

// unshardCollection runs {unshardCollection: ns, toShard?}: a sharded collection becomes one
// partition, on the shard named or else on the shard holding most of its documents. An
// unsharded collection is left as it is.
func (h *Handlers) unshardCollection(_ context.Context, r *command.Request) error {
	db, coll, to, err := h.parseLayoutTarget(r, false)
	if err != nil {
		return err
	}
	c, err := h.layoutSource(r.Name, db, coll)
	if err != nil {
		return err
	}
	if !c.Sharded() {
		return nil
	}
	if to < 0 {
		to = h.fullestShard(c)
	}
	return h.runLayoutChange(r, sharding.ReshardSpec{DB: db, Coll: coll, Shards: []int{to}})
}

// fullestShard returns the shard holding most of c's documents.
func (h *Handlers) fullestShard(c *store.Collection) int {
	best, most := c.Partitions[0].Shard, int64(-1)
	for i, s := range h.Cat.Shards() {
		if docs, _ := s.CollStats(c.ID); docs > most {
			best, most = i, docs
		}
	}
	return best
}

// parseLayoutTarget parses {<cmd>: ns, toShard} (toShard required with need; -1 when absent).
func (h *Handlers) parseLayoutTarget(r *command.Request, need bool) (db, coll string, to int, err error) {
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return "", "", 0, err
	}
	if db, coll, err = parseNamespace(ns); err != nil {
		return "", "", 0, err
	}
	to, name := -1, ""
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "toShard" {
			return false, nil
		}
		var err error
		name, err = args.String(r.Name, key, v)
		return true, err
	})
	switch {
	case err != nil:
		return "", "", 0, err
	case name != "":
		if to = h.shardByName(name); to < 0 {
			return "", "", 0, mongoerr.New(mongoerr.ShardNotFound, "Shard %s not found", name)
		}
	case need:
		return "", "", 0, args.Missing(r.Name, "toShard")
	}
	return db, coll, to, nil
}

// layoutSource returns the collection a layout change of cmd would copy, or MongoDB's error:
// NamespaceNotFound, a view's, or a refusal of what cleave cannot copy yet. In a cluster the
// node a reshardCollection or unshardCollection reaches coordinates it
// (exec/sharding/reshard_cluster.go).
func (h *Handlers) layoutSource(cmd, db, coll string) (*store.Collection, error) {
	return h.layoutCollection(cmd, db, coll)
}

// layoutCollection is layoutSource for moveCollection too.
func (h *Handlers) layoutCollection(cmd, db, coll string) (*store.Collection, error) {
	if h.CRUD.IsView(db, coll) {
		return nil, catalog.ViewError(db + "." + coll)
	}
	c := h.Storage.Catalog.State().Collection(db, coll)
	switch {
	case c == nil || strings.HasPrefix(coll, sharding.ReshardTempPrefix):
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "Collection %s.%s does not exist", db, coll)
	case catalog.IsCapped(c):
		return nil, mongoerr.New(mongoerr.InvalidOptions, "%s is not supported for a capped collection", cmd)
	case catalog.IsTimeseries(c):
		return nil, mongoerr.New(mongoerr.NotImplemented, "%s of a time series collection is not supported by cleave", cmd)
	}
	return c, nil
}

// runLayoutChange runs spec for command r and waits for its end.
func (h *Handlers) runLayoutChange(r *command.Request, spec sharding.ReshardSpec) error {
	spec.Command = r.Name
	spec.Original = append(bsoncore.Document(nil), r.Body...)
	_, _, err := h.Shards.Reshard(spec)
	return err
}

// forwardSteer sends abortReshardCollection or commitReshardCollection of db.coll to the
// node coordinating its layout change in a cluster, as the catalog records it; false when no
// other node runs one.
func (h *Handlers) forwardSteer(cmd, db, coll string) (bool, error) {
	node := h.Shards.ReshardCoordinator(db, coll)
	if node == "" || node == h.Shards.NodeName() {
		return false, nil
	}
	body := bsoncore.NewDocumentBuilder().AppendString(cmd, db+"."+coll).AppendString("$db", "admin").Build()
	if _, err := h.Shards.ForwardToNode(node, body); err != nil {
		return false, err
	}
	return true, nil
}

// steerReshard returns abortReshardCollection (commit false) or commitReshardCollection:
// {<cmd>: ns} reaches the layout change running on ns, or fails with
// NoSuchReshardCollection.
func (h *Handlers) steerReshard(commit bool) func(context.Context, *command.Request) error {
	return func(_ context.Context, r *command.Request) error {
		first, _ := bsonx.FirstElement(r.Body)
		ns, err := args.String(r.Name, r.Name, first.Value())
		if err != nil {
			return err
		}
		db, coll, err := parseNamespace(ns)
		if err != nil {
			return err
		}
		ok := false
		if commit {
			ok = h.Shards.CommitReshard(db, coll)
		} else {
			ok = h.Shards.AbortReshard(db, coll)
		}
		if !ok {
			ok, err = h.forwardSteer(r.Name, db, coll)
		}
		if err != nil {
			return err
		}
		if !ok {
			return mongoerr.New(mongoerr.NoSuchReshardCollection, "Could not find an active resharding operation for namespace %s", ns)
		}
		return nil
	}
}
