package colls

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/collation"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addShardCommands registers the sharding commands and starts the partition manager.
func (h *Handlers) addShardCommands(add func(*command.Command)) {
	add(&command.Command{Name: "enableSharding", Aliases: []string{"enablesharding"}, Run: h.enableSharding, Action: auth.ActionClusterAdmin, Help: "enable sharding on a database", AdminOnly: true})
	add(&command.Command{Name: "shardCollection", Aliases: []string{"shardcollection"}, Run: h.shardCollection, Action: auth.ActionClusterAdmin, Help: "shard a collection by a hashed key", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "customAction", Run: h.customAction, Action: auth.ActionDDL, Help: "Azure Cosmos DB's collection and database commands"})
	add(&command.Command{Name: "partitionStats", Run: h.partitionStats, Action: auth.ActionListing, Help: "per-partition storage, documents, RU/s and hot keys"})
	add(&command.Command{Name: "listShards", Run: h.listShards, Action: auth.ActionClusterAdmin, Help: "list the shards", AdminOnly: true})
	add(&command.Command{Name: "balancerStatus", Run: h.balancerStatus, Action: auth.ActionClusterAdmin, Help: "the balancer's state", AdminOnly: true})
	add(&command.Command{Name: "getShardVersion", Aliases: []string{"getshardversion"}, Run: h.getShardVersion, Action: auth.ActionClusterAdmin, Help: "a sharded collection's version", AdminOnly: true})
	add(&command.Command{Name: "getShardMap", Run: h.getShardMap, Action: auth.ActionClusterAdmin, Help: "the shards and their hosts", AdminOnly: true})
	add(&command.Command{Name: "moveChunk", Aliases: []string{"movechunk"}, Run: h.moveChunk, Action: auth.ActionClusterAdmin, Help: "move the partition holding a shard-key value to a shard", AdminOnly: true})
	add(&command.Command{Name: "mergeChunks", Aliases: []string{"mergechunks"}, Run: h.mergeChunks, Action: auth.ActionClusterAdmin, Help: "merge the adjacent partitions of one shard that fill a range", AdminOnly: true})
	add(&command.Command{Name: "mergeAllChunksOnShard", Run: h.mergeAllChunksOnShard, Action: auth.ActionClusterAdmin, Help: "merge every run of adjacent partitions of a collection on a shard", AdminOnly: true})
	add(&command.Command{Name: "balancerStart", Run: h.balancerSwitch(true), Action: auth.ActionClusterAdmin, Help: "let the partition manager move partitions to balance shards", AdminOnly: true})
	add(&command.Command{Name: "balancerStop", Run: h.balancerSwitch(false), Action: auth.ActionClusterAdmin, Help: "stop the partition manager's balancing moves (splits and moveChunk go on)", AdminOnly: true})
	add(&command.Command{Name: "addShard", Aliases: []string{"addshard"}, Run: h.addShard, Action: auth.ActionClusterAdmin, Help: "refused: a node's shards come from its --shards, and a cluster grows by nodes joining it", AdminOnly: true})
	add(&command.Command{Name: "flushRouterConfig", Aliases: []string{"flushrouterconfig"}, Run: h.flushRouterConfig, Action: auth.ActionClusterAdmin, Help: "nothing to flush: the routing follows the catalog as it changes", AdminOnly: true})
	add(&command.Command{Name: "checkMetadataConsistency", Run: h.checkMetadataConsistency, Action: auth.ActionClusterAdmin, Help: "check the partition maps of a cluster, database or collection"})
}

// checkMetadataConsistency answers MongoDB 7.0's command: a cursor of the inconsistencies
// found in the sharding metadata of every collection (on admin), of the database, or of one
// collection ({checkMetadataConsistency: "coll"} or {checkMetadataConsistency: 1, coll}).
// cleave's metadata is one catalog, so what can disagree is a collection's partition map with
// itself (its ranges, or a shard that does not exist): each such map is one
// RoutingTableRangeGap document.
func (h *Handlers) checkMetadataConsistency(_ context.Context, r *command.Request) error {
	const cmd = "checkMetadataConsistency"
	first, _ := bsonx.FirstElement(r.Body)
	coll := ""
	if s, ok := first.Value().StringValueOK(); ok {
		coll = s
	}
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "coll":
			coll, err = args.String(cmd, key, v)
		case "checkIndexes", "dbMetadataLockMaxTimeMS", "cursor":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	st := h.Storage.Catalog.State()
	var colls []*store.Collection
	switch {
	case coll != "":
		if c := st.Collection(r.DB, coll); c != nil {
			colls = append(colls, c)
		}
	case r.DB == "admin":
		for _, d := range st.Databases() {
			colls = append(colls, st.Collections(d.Name)...)
		}
	default:
		colls = st.Collections(r.DB)
	}
	var found []bsoncore.Document
	for _, c := range colls {
		m, err := sharding.MapOf(c)
		if err == nil {
			for i := 0; i < m.Len(); i++ {
				if s := m.Partition(i).Shard; s < 0 || s >= len(h.Cat.Shards()) {
					err = fmt.Errorf("partition %d is placed on shard %d, which does not exist", m.Partition(i).ID, s)
				}
			}
		}
		if err == nil {
			continue
		}
		found = append(found, bsoncore.NewDocumentBuilder().
			AppendString("type", "RoutingTableRangeGap").
			AppendString("description", "Found an inconsistency in the partition map of "+c.DB+"."+c.Name+": "+err.Error()).
			AppendDocument("details", bsoncore.NewDocumentBuilder().
				AppendString("namespace", c.DB+"."+c.Name).
				AppendBinary("collectionUUID", 4, c.UUID[:]).Build()).Build())
	}
	return command.AppendCursorReply(r, r.DB+".$cmd.aggregate", found)
}

// enableSharding accepts {enableSharding: db}: every database can hold sharded
// collections, so it only creates the database.
func (h *Handlers) enableSharding(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return err
	}
	if err := catalog.ValidateDBName(name); err != nil {
		return err
	}
	if err := h.Storage.Catalog.CreateDatabase(name, nil); err != nil && !errors.Is(err, store.ErrExists) {
		return catalog.StoreError(err)
	}
	return nil
}

// shardCollection runs {shardCollection: "db.coll", key: {field: "hashed"}, ...}.
func (h *Handlers) shardCollection(_ context.Context, r *command.Request) error {
	const cmd = "shardCollection"
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return err
	}
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll == "" {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	spec := sharding.Spec{DB: db, Coll: coll}
	var unique, presplit, simple bool
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "key":
			spec.Key, err = args.Doc(cmd, key, v)
		case "unique":
			unique, err = args.Bool(cmd, key, v)
		case "numInitialChunks":
			var n int64
			n, err = args.Int64(cmd, key, v)
			if err == nil && (n < 0 || n > 8192) {
				err = mongoerr.New(mongoerr.InvalidOptions, "numInitialChunks cannot be more than either: 8192, 8192 * number of shards; or 1000000")
			}
			spec.NumInitialChunks = int(n)
		case "presplitHashedZones":
			presplit, err = args.Bool(cmd, key, v)
		case "collation":
			var d bsoncore.Document
			if d, err = args.Doc(cmd, key, v); err == nil {
				var c *collation.Collation
				if c, err = collation.Parse(d); err == nil && c != nil {
					// The hash is of the raw value: the shard key index must be simple.
					err = mongoerr.New(mongoerr.BadValue, "The collation for shardCollection must be {locale: 'simple'}, but found: %s", bsonx.ShellString(v))
				}
				simple = true
			}
		case "timeseries":
			err = mongoerr.New(mongoerr.NotImplemented, "sharded time series collections are not supported by cleave")
		case "implicitlyCreateIndex", "enforceUniquenessCheck", "dropIndexesIfNeeded":
			_, err = args.Bool(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if spec.Key == nil {
		return args.Missing(cmd, "key")
	}
	if h.CRUD.IsView(db, coll) {
		return catalog.ViewError(ns)
	}
	spec.Key = append(bsoncore.Document(nil), spec.Key...) // the body aliases the read buffer
	if err := validateShardKey(spec.Key); err != nil {
		return err
	}
	if ci, _ := h.Cat.Lookup(db, coll); ci != nil && ci.Collation != nil && !simple {
		return mongoerr.New(mongoerr.BadValue, "Collection has default collation: %s. Please specify collation {locale: 'simple'}",
			bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ci.Collation.Document()}))
	}
	if err := checkKeyOptions(spec, unique); err != nil {
		return err
	}
	spec.PresplitHashedZones = presplit
	c, err := h.shardColl(spec)
	if err != nil {
		return err
	}
	out := bsoncore.AppendStringElement(r.Out, "_t", "ShardCollectionResponse")
	out = bsoncore.AppendStringElement(out, "collectionsharded", ns)
	r.Out = bsoncore.AppendBinaryElement(out, "collectionUUID", 4, c.UUID[:])
	return nil
}

// validateShardKey accepts MongoDB's shard keys: fields with 1 or "hashed", no empty or
// $-prefixed names, and either one hashed field (cleave partitions by hash; the other
// fields are carried), a hierarchical key of two or three hashed fields and nothing else
// (exec/catalog/hier.go), or ascending fields only, a ranged key (exec/catalog/ranged.go).
func validateShardKey(key bsoncore.Document) error {
	elems, err := key.Elements()
	if err != nil || len(elems) == 0 {
		return mongoerr.New(mongoerr.BadValue, "Shard key pattern must not be empty")
	}
	pattern := bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: key})
	unsupported := func() error {
		return mongoerr.New(mongoerr.BadValue, "Unsupported shard key pattern %s. Pattern must either be a single hashed field, or a list of ascending fields", pattern)
	}
	hashed := 0
	for _, el := range elems {
		k := el.Key()
		if k == "" || strings.HasPrefix(k, "$") || strings.Contains(k, "..") || strings.HasPrefix(k, ".") || strings.HasSuffix(k, ".") {
			return unsupported()
		}
		v := el.Value()
		if s, ok := v.StringValueOK(); ok && s == "hashed" {
			hashed++
			continue
		}
		if n, ok := bsonx.NumberAsFloat64(v); ok && n == 1 {
			continue
		}
		return unsupported()
	}
	switch {
	case hashed > shard.MaxLevels:
		return mongoerr.New(mongoerr.BadValue, "Shard key pattern %s can contain at most %d 'hashed' fields: a hierarchical shard key has at most %d levels",
			pattern, shard.MaxLevels, shard.MaxLevels)
	case hashed > 1 && hashed < len(elems):
		return mongoerr.New(mongoerr.BadValue, "Unsupported shard key pattern %s. A hierarchical shard key (more than one 'hashed' field) must have only 'hashed' fields", pattern)
	case hashed == 0 && len(elems) > maxRangedFields:
		return mongoerr.New(mongoerr.BadValue, "Shard key pattern %s has %d fields: cleave places a ranged key of at most %d fields", pattern, len(elems), maxRangedFields)
	}
	return nil
}

// shardColl shards collection spec.db.spec.coll, creating it when it does not exist and
// converting its documents when it holds some (exec/sharding/convert.go). Sharding a collection
// again with the same key succeeds and changes nothing, as in MongoDB.
func (h *Handlers) shardColl(spec sharding.Spec) (*store.Collection, error) {
	if err := catalog.ValidateCollName(spec.DB, spec.Coll); err != nil {
		return nil, err
	}
	unlock := h.Cat.LockDDL()
	defer unlock()
	c := h.Storage.Catalog.State().Collection(spec.DB, spec.Coll)
	if c != nil && catalog.IsCapped(c) || catalog.CappedOf(spec.Options) != nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "can't shard a capped collection")
	}
	if c != nil && c.Sharded() {
		if equalKeys(c.ShardKey, spec.Key) {
			return c, nil
		}
		return nil, mongoerr.New(mongoerr.AlreadyInitialized, "sharding already enabled for collection %s.%s with options { key: %s }",
			spec.DB, spec.Coll, bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: c.ShardKey}))
	}
	zones, err := h.checkShardZones(spec, c)
	if err != nil {
		return nil, err
	}
	local := h.Shards.LocalShards() // in a cluster, a collection converted in place stays on this node's shards
	n := initialCount(h, spec, len(local))
	if c == nil {
		return h.createSharded(spec, zones)
	}
	c, err = h.Shards.ConvertToSharded(c, spec, n)
	if err != nil {
		return nil, err
	}
	if len(zones) > 0 { // its partitions move into their zones by the balancer, as MongoDB's chunks do
		if err := h.Shards.SetZones(spec.DB, spec.Coll, zones); err != nil {
			return nil, catalog.StoreError(err)
		}
		h.dropPendingZones(spec)
	}
	h.recordSharded(c, spec.PresplitHashedZones)
	h.Shards.AfterMapChange()
	return c, nil
}

// checkShardZones returns the zone ranges defined for spec's namespace before it is sharded,
// checked against spec's key (zonesForKey), and applies presplitHashedZones' rules to c, the
// collection as it is (nil when it does not exist).
func (h *Handlers) checkShardZones(spec sharding.Spec, c *store.Collection) ([]bsoncore.Document, error) {
	zones, ci, err := zonesForKey(spec.Key, spec.DB+"."+spec.Coll, h.Shards.PendingZones(spec.DB, spec.Coll))
	if err != nil || !spec.PresplitHashedZones {
		return zones, err
	}
	empty := c == nil
	if c != nil && len(c.Partitions) == 1 && slices.Contains(h.Shards.LocalShards(), c.Partitions[0].Shard) {
		docs, _ := h.Cat.Shards()[c.Partitions[0].Shard].CollStats(c.ID)
		empty = docs == 0 // another node's collection counts as filled: this node cannot count it
	}
	return zones, checkPresplit(ci, zones, empty)
}

// createSharded creates spec's collection sharded: its partitions spread over the placement
// shards, or along its zone ranges (sharding.Manager.ZonePartitions).
func (h *Handlers) createSharded(spec sharding.Spec, zones []bsoncore.Document) (*store.Collection, error) {
	local := h.placementShards()
	n := initialCount(h, spec, len(local))
	var parts []store.Partition
	if len(zones) > 0 {
		var err error
		if parts, err = h.Shards.ZonePartitions(spec.Key, zones, local, spec.PresplitHashedZones); err != nil {
			return nil, err
		}
	} else {
		parts = sharding.StoreParts(shard.InitialLayout(n, layoutShards(spec, len(local)), 0))
		for i := range parts {
			parts[i].ID = 0 // the catalog assigns fresh ids
			parts[i].Shard = local[parts[i].Shard]
		}
	}
	c, err := h.Storage.Catalog.CreateCollection(store.Collection{DB: spec.DB, Name: spec.Coll, Options: spec.Options,
		ShardKey: spec.Key, Throughput: spec.Throughput, Autoscale: spec.Autoscale, Partitions: parts, Zones: zones})
	if err != nil {
		return nil, catalog.ChangeError(err, spec.DB, spec.Coll)
	}
	h.dropPendingZones(spec)
	h.Log.Info("sharded collection", zap.String("ns", spec.DB+"."+spec.Coll), zap.Int("partitions", len(parts)), zap.Int("zone_ranges", len(zones)))
	h.RecordCreate(c)
	h.recordSharded(c, spec.PresplitHashedZones)
	h.Shards.AfterMapChange()
	return c, nil
}

// dropPendingZones forgets the zone ranges spec's namespace had before it was sharded, now
// the collection's own; a failure only leaves them hidden by the collection's (config.tags
// shows the collection's).
func (h *Handlers) dropPendingZones(spec sharding.Spec) {
	if err := h.forgetPendingZones(spec.DB, spec.Coll); err != nil {
		h.Log.Warn("cannot forget the zone ranges of a namespace now sharded", zap.String("ns", spec.DB+"."+spec.Coll), zap.Error(err))
	}
}

// forgetPendingZones removes the zone ranges defined for db.coll before it was sharded, if
// it has any: shardCollection made them the collection's, or drop removed the namespace (as
// MongoDB's drop removes a namespace's config.tags whether it was sharded, unsharded or
// absent).
func (h *Handlers) forgetPendingZones(db, coll string) error {
	if h.Shards == nil || len(h.Shards.PendingZones(db, coll)) == 0 {
		return nil
	}
	return h.Shards.SetPendingZones(db, coll, nil)
}

// recordSharded records the shardCollection event of c, just sharded, as MongoDB's change
// streams show it with showExpandedEvents: its key, and that it is not unique (cleave's
// keys never are) or presplit by zones.
func (h *Handlers) recordSharded(c *store.Collection, presplit bool) {
	desc := bsoncore.NewDocumentBuilder().AppendDocument("shardKey", c.ShardKey).
		AppendBoolean("unique", false).AppendBoolean("presplitHashedZones", presplit).Build()
	h.RecordChange(&changes.DDL{Op: changes.OpShardCollection, DB: c.DB, Coll: c.Name, UUID: c.UUID[:], Desc: desc})
}

// placementShards returns the shards a new sharded collection's partitions spread over:
// every shard of a node that is up, in a cluster (as a presplit hashed collection's chunks
// spread over a sharded cluster's shards), since reads and inserts run on the owner's node;
// the node's own shards on a single node.
func (h *Handlers) placementShards() []int {
	c := h.Storage.Cluster
	if c == nil || h.Remote == nil {
		return h.Shards.LocalShards()
	}
	var out []int
	for s := range h.Cat.Shards() {
		if _, host := c.ShardHost(s); host != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return h.Shards.LocalShards()
	}
	return out
}

// equalKeys reports whether two key patterns are the same (1 and 1.0 alike).
func equalKeys(a, b bsoncore.Document) bool {
	ae, _ := a.Elements()
	be, _ := b.Elements()
	if len(ae) != len(be) {
		return false
	}
	for i := range ae {
		if ae[i].Key() != be[i].Key() || bsonx.Compare(ae[i].Value(), be[i].Value()) != 0 {
			return false
		}
	}
	return true
}

// listShards answers {listShards: 1}.
func (h *Handlers) listShards(_ context.Context, r *command.Request) error {
	aidx, out := bsoncore.AppendArrayElementStart(r.Out, "shards")
	for i, d := range h.Shards.ConfigDocs("shards") {
		out = bsoncore.AppendDocumentElement(out, bsonx.ArrayKey(i), d)
	}
	r.Out, _ = bsoncore.AppendArrayEnd(out, aidx)
	return nil
}

// getShardMap answers {getShardMap: 1}: shard names and their hosts.
func (h *Handlers) getShardMap(_ context.Context, r *command.Request) error {
	idx, out := bsoncore.AppendDocumentElementStart(r.Out, "map")
	for _, d := range h.Shards.ConfigDocs("shards") {
		id, _ := d.Lookup("_id").StringValueOK()
		host, _ := d.Lookup("host").StringValueOK()
		out = bsoncore.AppendStringElement(out, id, host)
	}
	out = bsoncore.AppendStringElement(out, "config", "config/"+h.ListenAddr())
	r.Out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return nil
}

// balancerSwitch returns the command that turns the balancer on or off (balancerStart,
// balancerStop): config.settings' balancer document, as on MongoDB (exec/sharding/balancer.go).
func (h *Handlers) balancerSwitch(on bool) func(context.Context, *command.Request) error {
	return func(context.Context, *command.Request) error {
		return h.Shards.SetBalancer(on)
	}
}

// balancerStatus answers {balancerStatus: 1} in MongoDB's shape.
func (h *Handlers) balancerStatus(_ context.Context, r *command.Request) error {
	mode := "full"
	if !h.Shards.BalancerOn() {
		mode = "off"
	}
	out := bsoncore.AppendStringElement(r.Out, "mode", mode)
	out = bsoncore.AppendBooleanElement(out, "inBalancerRound", false)
	out = bsoncore.AppendInt64Element(out, "numBalancerRounds", h.Shards.Rounds())
	r.Out = out
	return nil
}

// addShard answers {addShard: host}: a cleave node's shards are its --shards, in its own
// process, and a cluster grows by starting a node on the same etcd (--etcd), so there is no
// replica set to add: IllegalOperation naming the way that exists.
func (h *Handlers) addShard(_ context.Context, _ *command.Request) error {
	return mongoerr.New(mongoerr.IllegalOperation, "addShard is not how cleave grows: a node's shards are its --shards, and a cluster gains shards when a node started with --etcd joins it")
}

// flushRouterConfig answers {flushRouterConfig: 1 | db | ns}: a mongos drops its cached
// routing so that the next operation reads it again; cleave routes by the catalog itself,
// which every change updates at once (on a cluster's other nodes through their watch, a
// stale route being retried), so there is nothing cached to drop.
func (h *Handlers) flushRouterConfig(_ context.Context, r *command.Request) error {
	r.Out = bsoncore.AppendBooleanElement(r.Out, "flushed", true)
	return nil
}

// getShardVersion answers {getShardVersion: ns}: the collection's version as a timestamp.
func (h *Handlers) getShardVersion(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return err
	}
	db, coll, _ := strings.Cut(ns, ".")
	c := h.Storage.Catalog.State().Collection(db, coll)
	if c == nil || !c.Sharded() {
		return mongoerr.New(mongoerr.NamespaceNotSharded, "Collection %s is not sharded.", ns)
	}
	out := bsoncore.AppendTimestampElement(r.Out, "version", uint32(c.Version), 0)
	out = bsoncore.AppendObjectIDElement(out, "versionEpoch", sharding.EpochID(c))
	out = bsoncore.AppendTimestampElement(out, "versionTimestamp", uint32(c.CreatedAt.Unix()), 1)
	r.Out = out
	return nil
}
