package colls

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Azure Cosmos DB's extension commands ({customAction: ...}), as its "MongoDB extension
// commands" page documents them:
//
//	CreateDatabase   offerThroughput | autoScaleSettings: {maxThroughput}      → {ok: 1}
//	UpdateDatabase   the same; the database must have shared throughput          → {ok: 1}
//	GetDatabase                                                                  → {database, provisionedThroughput, autoScaleSettings}
//	CreateCollection collection, shardKey: "path", offerThroughput | autoScaleSettings, indexes
//	UpdateCollection collection, offerThroughput | autoScaleSettings (raising splits partitions)
//	GetCollection    collection → {database, collection, provisionedThroughput, autoScaleSettings,
//	                 shardKeyDefinition, numPartitions}
//
// A database keeps its shared offer in store.Database.Options ({throughput: N, autoscale:
// true}); a collection in store.Collection.Throughput and Autoscale. A collection without a
// shard key cannot be provisioned above t (--max-partition-ru), as Cosmos DB's unsharded
// collections stop at 10,000 RU/s. Errors are Cosmos DB's: code 2 (BadValue) with its
// message where one is known.

// Cosmos DB's throughput bounds in RU/s: manual offers from cosmosMinRU, autoscale maxima
// from cosmosMinAutoscaleRU, both up to cosmosMaxRU.
const (
	cosmosMinRU          = 400
	cosmosMinAutoscaleRU = 1000
	cosmosMaxRU          = 1_000_000
)

// offer is a requested throughput: RU/s, and whether it is an autoscale maximum. given is
// false when the command names none.
type offer struct {
	ru        int64
	autoscale bool
	given     bool
}

// customActionArgs are the parsed arguments of a customAction command.
type customActionArgs struct {
	action, coll string
	key          bsoncore.Document // the shard key pattern {path: "hashed"}; nil if none
	offer        offer
	indexes      []store.Index // without the _id index, which every collection has
	hasIndexes   bool
	// burst is enableBurstCapacity (cleave's: Cosmos DB sets it per account); default when
	// not given.
	burst store.Toggle
	// retry is throttleRetryMS as stored (store.Collection.ThrottleRetryMS), retrySet
	// whether it was given.
	retry    int64
	retrySet bool
	// redistribute is RedistributeThroughput's arguments.
	redistribute redistributeArgs
}

// customAction runs Azure Cosmos DB's extension commands: CreateCollection,
// UpdateCollection, GetCollection, CreateDatabase, UpdateDatabase, GetDatabase.
func (h *Handlers) customAction(ctx context.Context, r *command.Request) error {
	a, err := parseCustomAction(r.Body)
	if err != nil {
		return err
	}
	switch a.action {
	case "CreateCollection":
		return h.cosmosCreateCollection(ctx, r, a)
	case "UpdateCollection":
		return h.cosmosUpdateCollection(r, a)
	case "GetCollection":
		return h.cosmosGetCollection(r, a.coll)
	case "CreateDatabase":
		return h.cosmosCreateDatabase(r, a)
	case "UpdateDatabase":
		return h.cosmosUpdateDatabase(r, a)
	case "GetDatabase":
		return h.cosmosGetDatabase(r)
	case "RedistributeThroughput":
		return h.redistributeThroughput(r, a)
	}
	return mongoerr.New(mongoerr.CommandNotFound, "no such customAction: '%s'", a.action)
}

// parseCustomAction parses {customAction: action, collection, shardKey, offerThroughput,
// autoScaleSettings: {maxThroughput}, indexes}.
func parseCustomAction(body bsoncore.Document) (*customActionArgs, error) {
	const cmd = "customAction"
	first, _ := bsonx.FirstElement(body)
	action, err := args.String(cmd, cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a := &customActionArgs{action: action}
	err = args.ForEach(cmd, body, func(k string, v bsoncore.Value) (bool, error) {
		var err error
		switch k {
		case "collection":
			a.coll, err = args.String(cmd, k, v)
		case "shardKey":
			a.key, err = parseCosmosShardKey(cmd, v)
		case "offerThroughput", "autoScaleSettings":
			err = parseOffer(cmd, k, v, &a.offer)
		case "indexes":
			a.hasIndexes = true
			a.indexes, err = parseCosmosIndexes(cmd, v)
		case "enableBurstCapacity":
			var on bool
			on, err = args.Bool(cmd, k, v)
			a.burst = store.ToggleOff
			if on {
				a.burst = store.ToggleOn
			}
		case "throttleRetryMS":
			a.retry, err = parseThrottleRetry(cmd, k, v)
			a.retrySet = true
		case "targets", "reset":
			err = a.redistribute.parse(cmd, k, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if (strings.HasSuffix(action, "Collection") || action == "RedistributeThroughput") && a.coll == "" {
		return nil, args.Missing(cmd, "collection")
	}
	return a, nil
}

// parseOffer parses offerThroughput (an integer) or autoScaleSettings ({maxThroughput:
// integer}) into o and checks Cosmos DB's bounds; naming both is an error.
func parseOffer(cmd, key string, v bsoncore.Value, o *offer) error {
	if o.given {
		return mongoerr.New(mongoerr.BadValue, "offerThroughput and autoScaleSettings cannot both be given")
	}
	o.given = true
	if key == "offerThroughput" {
		n, err := args.Int64(cmd, key, v)
		if err != nil {
			return err
		}
		o.ru = n
		return checkOffer(*o)
	}
	d, err := args.Doc(cmd, key, v)
	if err != nil {
		return err
	}
	mv, err := d.LookupErr("maxThroughput")
	if err != nil {
		return args.Missing(cmd+".autoScaleSettings", "maxThroughput")
	}
	if o.ru, err = args.Int64(cmd, "autoScaleSettings.maxThroughput", mv); err != nil {
		return err
	}
	o.autoscale = true
	return checkOffer(*o)
}

// checkOffer applies Cosmos DB's bounds to a throughput, with its message. (Cosmos DB also
// wants multiples of 100, or of 1000 for autoscale; cleave accepts any value in range.)
func checkOffer(o offer) error {
	lo, step := int64(cosmosMinRU), 100
	if o.autoscale {
		lo, step = cosmosMinAutoscaleRU, 1000
	}
	if o.ru < lo || o.ru > cosmosMaxRU {
		return mongoerr.New(mongoerr.BadValue,
			"The offer should have valid throughput values between %d and %d inclusive in increments of %d.", lo, cosmosMaxRU, step)
	}
	return nil
}

// parseCosmosShardKey parses a shard key given as Cosmos DB does, a path string ("a.b", or
// "/a/b") or a list of up to three paths (a hierarchical key, ["/tenantId", "/userId"]), or
// as MongoDB does, a pattern document; it returns the hashed pattern.
func parseCosmosShardKey(cmd string, v bsoncore.Value) (bsoncore.Document, error) {
	var key bsoncore.Document
	switch v.Type {
	case bsoncore.TypeString:
		key = bsoncore.NewDocumentBuilder().AppendString(cosmosPath(v.StringValue()), "hashed").Build()
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		if len(vals) == 0 {
			return nil, mongoerr.New(mongoerr.BadValue, "Shard key pattern must not be empty")
		}
		b := bsoncore.NewDocumentBuilder()
		for _, p := range vals {
			s, ok := p.StringValueOK()
			if !ok {
				return nil, args.WrongType(cmd, "shardKey", p.Type, "string")
			}
			b.AppendString(cosmosPath(s), "hashed")
		}
		key = b.Build()
	default:
		d, err := args.Doc(cmd, "shardKey", v)
		if err != nil {
			return nil, err
		}
		key = append(bsoncore.Document(nil), d...) // the body aliases the read buffer
	}
	if err := validateShardKey(key); err != nil {
		return nil, err
	}
	return key, nil
}

// cosmosPath turns a Cosmos DB partition key path ("/a/b") into a dotted path ("a.b").
func cosmosPath(path string) string {
	return strings.TrimPrefix(strings.ReplaceAll(path, "/", "."), ".")
}

// parseCosmosIndexes parses CreateCollection's indexes, createIndexes' index specs. The _id
// index, which Cosmos DB requires in the list, is left out: every collection has it.
func parseCosmosIndexes(cmd string, v bsoncore.Value) ([]store.Index, error) {
	arr, err := args.Array(cmd, "indexes", v)
	if err != nil {
		return nil, err
	}
	vals, _ := arr.Values()
	var out []store.Index
	for _, v := range vals {
		x, err := ddl.ParseIndexSpec(v, false)
		if err != nil {
			return nil, err
		}
		if equalKeys(x.Key, idKeyPattern) {
			continue
		}
		out = append(out, x)
	}
	return out, nil
}

// checkUnshardedOffer refuses throughput above t on a collection without a shard key: it
// cannot have more than one partition. The message starts with Cosmos DB's own.
func (h *Handlers) checkUnshardedOffer(o offer, sharded bool) error {
	t := h.Shards.Policy().PartitionMaxRU
	if sharded || !o.given || float64(o.ru) <= t {
		return nil
	}
	return mongoerr.New(mongoerr.BadValue,
		"Provisioned throughput collection should have a partition key: a collection without a shardKey can be provisioned with at most %d RU/s, not %d; give a shardKey",
		int64(t), o.ru)
}

// cosmosCreateCollection answers customAction CreateCollection: coll with the requested
// throughput, sharded on shardKey when given (ceil(T/t) partitions), with its indexes.
func (h *Handlers) cosmosCreateCollection(ctx context.Context, r *command.Request, a *customActionArgs) error {
	if h.Storage.Catalog.State().Collection(r.DB, a.coll) != nil {
		return mongoerr.New(mongoerr.NamespaceExists, "Collection %s.%s already exists.", r.DB, a.coll)
	}
	if err := h.checkUnshardedOffer(a.offer, a.key != nil); err != nil {
		return err
	}
	// Conflicts among the requested indexes fail before the collection exists.
	if _, twice, err := resolveIndexes(a.indexes, []store.Index{{Name: store.IDIndexName, Key: idKeyPattern}}); err != nil || twice != "" {
		if err == nil {
			err = mongoerr.New(mongoerr.IndexAlreadyExists, "Identical index already exists: %s", twice)
		}
		return err
	}
	if a.key == nil {
		if err := h.createUnsharded(r.DB, a.coll, nil, a.offer); err != nil {
			return err
		}
	} else {
		spec := sharding.Spec{DB: r.DB, Coll: a.coll, Key: a.key, Throughput: a.offer.ru, Autoscale: a.offer.autoscale}
		if _, err := h.shardColl(spec); err != nil {
			return err
		}
	}
	if err := h.setBurstCapacity(r.DB, a.coll, a.burst); err != nil {
		return err
	}
	if err := h.setThrottleRetry(r.DB, a); err != nil {
		return err
	}
	if len(a.indexes) > 0 {
		if _, err := h.ensureIndexes(ctx, r.DB, a.coll, a.indexes); err != nil {
			return err
		}
	}
	return nil
}

// createUnsharded creates db.coll without a shard key, with options opts and throughput o.
func (h *Handlers) createUnsharded(db, coll string, opts bsoncore.Document, o offer) error {
	if err := catalog.ValidateCollName(db, coll); err != nil {
		return err
	}
	unlock := h.Cat.LockDDL()
	defer unlock()
	c, err := h.Storage.Catalog.CreateCollection(store.Collection{DB: db, Name: coll, Options: opts,
		Throughput: o.ru, Autoscale: o.autoscale, Indexes: catalog.TimeseriesOf(opts).DefaultIndexes()})
	if err != nil {
		return catalog.ChangeError(err, db, coll)
	}
	h.RecordCreate(c)
	h.Log.Info("created collection", zap.String("ns", db+"."+coll), zap.Int64("throughput", o.ru), zap.Bool("autoscale", o.autoscale))
	return nil
}

// cosmosUpdateCollection answers customAction UpdateCollection: it stores the new throughput
// and, when T rises above t·N, splits partitions until N = ceil(T/t); lowering T merges
// adjacent partitions of one shard toward N = ceil(T/t), as far as their data and load allow
// (sharding.Manager.MergeTo).
func (h *Handlers) cosmosUpdateCollection(r *command.Request, a *customActionArgs) error {
	c := h.Storage.Catalog.State().Collection(r.DB, a.coll)
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s.%s", r.DB, a.coll)
	}
	if a.hasIndexes {
		return mongoerr.New(mongoerr.NotImplemented, "UpdateCollection's indexes (replacing the index set) are not supported by cleave; use createIndexes and dropIndexes")
	}
	if a.key != nil {
		return mongoerr.New(mongoerr.BadValue, "the shard key of a collection cannot be changed by UpdateCollection")
	}
	if err := h.setThrottleRetry(r.DB, a); err != nil {
		return err
	}
	if err := h.setBurstCapacity(r.DB, a.coll, a.burst); err != nil || !a.offer.given {
		return err
	}
	if err := h.checkUnshardedOffer(a.offer, c.Sharded()); err != nil {
		return err
	}
	lowered := a.offer.ru < c.Throughput
	c, err := h.Storage.Catalog.UpdateCollection(r.DB, a.coll, func(c *store.Collection) error {
		c.Throughput, c.Autoscale = a.offer.ru, a.offer.autoscale
		return nil
	})
	if err != nil {
		return catalog.ChangeError(err, r.DB, a.coll)
	}
	n := max(1, int(math.Ceil(float64(a.offer.ru)/h.Shards.Policy().PartitionMaxRU)))
	switch {
	case !c.Sharded():
		return nil
	case n > len(c.Partitions):
		err = h.Shards.SplitTo(r.DB, a.coll, n)
	case n < len(c.Partitions) && lowered: // as far as the partitions' data and load allow
		err = h.Shards.MergeTo(r.DB, a.coll, n)
	default:
		return nil
	}
	if errors.Is(err, shard.ErrStaleAction) {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s.%s", r.DB, a.coll)
	}
	return err
}

// cosmosGetCollection answers customAction GetCollection in Cosmos DB's shape, plus cleave's
// numPartitions. A collection sharing its database's throughput shows none of its own, as in
// Cosmos DB.
func (h *Handlers) cosmosGetCollection(r *command.Request, coll string) error {
	c := h.Storage.Catalog.State().Collection(r.DB, coll)
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s.%s", r.DB, coll)
	}
	out := bsoncore.AppendStringElement(r.Out, "_t", "GetCollectionResponse")
	out = bsoncore.AppendStringElement(out, "database", r.DB)
	out = bsoncore.AppendStringElement(out, "collection", coll)
	out = appendOffer(out, c.Throughput, c.Autoscale)
	if c.ShardKey != nil {
		out = bsoncore.AppendDocumentElement(out, "shardKeyDefinition", c.ShardKey)
	}
	out = bsoncore.AppendInt32Element(out, "numPartitions", int32(len(c.Partitions)))
	r.Out = h.appendThroughputPolicy(out, c)
	return nil
}

// appendOffer appends a throughput as Cosmos DB's Get commands answer it, as ints (mongosh
// compares them with ===): manual, provisionedThroughput; autoscale, provisionedThroughput
// is the floor it scales down to (a tenth of the maximum) and autoScaleSettings holds the
// maximum. Nothing when ru is 0.
func appendOffer(dst []byte, ru int64, autoscale bool) []byte {
	if ru <= 0 {
		return dst
	}
	if !autoscale {
		return bsonx.AppendIntElement(dst, "provisionedThroughput", ru)
	}
	dst = bsonx.AppendIntElement(dst, "provisionedThroughput", ru/10)
	idx, dst := bsoncore.AppendDocumentElementStart(dst, "autoScaleSettings")
	dst = bsonx.AppendIntElement(dst, "maxThroughput", ru)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// offerOptions returns a database's Options for shared throughput o, burst capacity burst
// and server-side retry (store.Collection.ThrottleRetryMS's values), nil for none.
func offerOptions(o offer, burst store.Toggle, retry int64) bsoncore.Document {
	if !o.given && burst == store.ToggleDefault && retry == 0 {
		return nil
	}
	b := bsoncore.NewDocumentBuilder()
	if o.given {
		b.AppendInt64("throughput", o.ru)
	}
	if o.autoscale {
		b.AppendBoolean("autoscale", true)
	}
	if burst != store.ToggleDefault {
		b.AppendBoolean("burstCapacity", burst == store.ToggleOn)
	}
	if retry != 0 {
		b.AppendInt64("throttleRetryMS", retry)
	}
	return b.Build()
}

// cosmosCreateDatabase answers customAction CreateDatabase: the database, with shared
// throughput when an offer is given.
func (h *Handlers) cosmosCreateDatabase(r *command.Request, a *customActionArgs) error {
	if err := catalog.ValidateDBName(r.DB); err != nil {
		return err
	}
	if err := h.Storage.Catalog.CreateDatabase(r.DB, offerOptions(a.offer, a.burst, a.retry)); err != nil {
		if errors.Is(err, store.ErrExists) {
			return mongoerr.New(mongoerr.NamespaceExists, "Database %s already exists.", r.DB)
		}
		return catalog.StoreError(err)
	}
	return nil
}

// cosmosUpdateDatabase answers customAction UpdateDatabase: it replaces the database's
// shared throughput, which it must have (Cosmos DB has no offer to update otherwise), and/or
// its burst capacity setting.
func (h *Handlers) cosmosUpdateDatabase(r *command.Request, a *customActionArgs) error {
	o, burst := a.offer, a.burst
	if !o.given && burst == store.ToggleDefault && !a.retrySet {
		return mongoerr.New(mongoerr.BadValue, "UpdateDatabase needs offerThroughput, autoScaleSettings, enableBurstCapacity or throttleRetryMS")
	}
	_, err := h.Storage.Catalog.UpdateDatabase(r.DB, func(d *store.Database) error {
		ru, autoscale := sharding.DatabaseThroughput(d)
		if o.given && ru <= 0 {
			return mongoerr.New(mongoerr.BadValue,
				"Database %s has no shared throughput to update: create it with CreateDatabase and offerThroughput or autoScaleSettings, or provision its collections with UpdateCollection", r.DB)
		}
		if !o.given && ru > 0 {
			o = offer{ru: ru, autoscale: autoscale, given: true}
		}
		if burst == store.ToggleDefault {
			burst = databaseBurst(d)
		}
		retry := a.retry
		if !a.retrySet {
			retry = databaseRetry(d)
		}
		d.Options = offerOptions(o, burst, retry)
		return nil
	})
	var merr *mongoerr.Error
	switch {
	case errors.As(err, &merr):
		return merr
	case errors.Is(err, store.ErrNotFound):
		return mongoerr.New(mongoerr.NamespaceNotFound, "database %s not found", r.DB)
	}
	return catalog.StoreError(err)
}

// databaseBurst returns database d's burst capacity setting (its Options' burstCapacity).
func databaseBurst(d *store.Database) store.Toggle {
	if d == nil || d.Options == nil {
		return store.ToggleDefault
	}
	on, ok := d.Options.Lookup("burstCapacity").BooleanOK()
	switch {
	case !ok:
		return store.ToggleDefault
	case on:
		return store.ToggleOn
	}
	return store.ToggleOff
}

// cosmosGetDatabase answers customAction GetDatabase in Cosmos DB's shape.
func (h *Handlers) cosmosGetDatabase(r *command.Request) error {
	d := h.Storage.Catalog.State().Database(r.DB)
	if d == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "database %s not found", r.DB)
	}
	ru, autoscale := sharding.DatabaseThroughput(d)
	out := bsoncore.AppendStringElement(r.Out, "_t", "GetDatabaseResponse")
	out = bsoncore.AppendStringElement(out, "database", r.DB)
	out = appendOffer(out, ru, autoscale)
	if burst := databaseBurst(d); burst != store.ToggleDefault {
		out = bsoncore.AppendBooleanElement(out, "enableBurstCapacity", burst == store.ToggleOn)
	}
	if retry := databaseRetry(d); retry != 0 {
		out = bsoncore.AppendInt64Element(out, "throttleRetryMS", max(retry, 0))
	}
	r.Out = out
	return nil
}

// createSharding is what a create command asks beyond MongoDB's options: a shard key
// (cleave and Cosmos DB style) and a throughput.
type createSharding struct {
	key   bsoncore.Document
	offer offer
}

// parseCreateSharding reads create's shardKey ({field: "hashed"} or a Cosmos DB path
// string), offerThroughput and autoScaleSettings; nil when none is given.
func parseCreateSharding(body bsoncore.Document) (*createSharding, error) {
	const cmd = "create"
	var s createSharding
	found := false
	elems, _ := body.Elements()
	for _, el := range elems[min(1, len(elems)):] {
		var err error
		switch k := el.Key(); k {
		case "shardKey":
			s.key, err = parseCosmosShardKey(cmd, el.Value())
		case "offerThroughput", "autoScaleSettings":
			err = parseOffer(cmd, k, el.Value(), &s.offer)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		found = true
	}
	if !found {
		return nil, nil
	}
	return &s, nil
}

// createWithSharding runs a create command that names a shard key or a throughput: sharded
// collections go through shardColl (ceil(T/t) partitions); unsharded ones are limited to t.
// Creating the same sharded collection again succeeds, as create does.
func (h *Handlers) createWithSharding(db, coll string, opts bsoncore.Document, s *createSharding) error {
	if err := h.checkUnshardedOffer(s.offer, s.key != nil); err != nil {
		return err
	}
	if c := h.Storage.Catalog.State().Collection(db, coll); c != nil {
		if bytes.Equal(c.Options, opts) && equalKeys(c.ShardKey, s.key) && (c.ShardKey == nil) == (s.key == nil) {
			return nil
		}
		return mongoerr.New(mongoerr.NamespaceExists, "Collection %s.%s already exists.", db, coll)
	}
	if s.key == nil {
		return h.createUnsharded(db, coll, opts, s.offer)
	}
	if catalog.TimeseriesOf(opts) != nil {
		return mongoerr.New(mongoerr.NotImplemented, "sharded time series collections are not supported by cleave")
	}
	_, err := h.shardColl(sharding.Spec{DB: db, Coll: coll, Key: s.key, Options: opts,
		Throughput: s.offer.ru, Autoscale: s.offer.autoscale})
	return err
}
