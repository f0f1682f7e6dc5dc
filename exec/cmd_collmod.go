package exec

import (
	"github.com/cleavedb/cleave/exec/args"

	"github.com/cleavedb/cleave/exec/catalog"

	"context"
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// collMod changes the options of a collection or of one of its indexes, as MongoDB 7.0's:
//
//   - index: {keyPattern | name, expireAfterSeconds, hidden, prepareUnique, unique,
//     forceNonUnique}: a hidden index is maintained but not planned with; unique conversion
//     is collmod_unique.go's two steps;
//   - expireAfterSeconds (a number or "off") of a clustered or time-series collection;
//   - timeseries: {granularity} or {bucketMaxSpanSeconds, bucketRoundingSeconds};
//   - changeStreamPreAndPostImages: {enabled}, stored and shown by listCollections (cleave
//     has no change streams to use it);
//   - validator, validationLevel, validationAction: stored and shown by listCollections
//     like create's, and, like create's, not enforced by cleave's writes;
//   - viewOn and pipeline fail as they do on a collection that is not a view (cleave has
//     no views); cappedSize and cappedMax as on a collection that is not capped.
//
// The reply is mongod's: {expireAfterSeconds_old, expireAfterSeconds_new, hidden_old,
// hidden_new, unique_new, prepareUnique_old, prepareUnique_new, forceNonUnique_new, ok}
// with the fields of the changes made.

// collModArgs are the parsed arguments of collMod.
type collModArgs struct {
	coll  string
	index *collModIndex
	// opts are the collection options given (validator, validationLevel, validationAction,
	// changeStreamPreAndPostImages, expireAfterSeconds, timeseries), as given.
	opts   optionSet
	view   string // "viewOn" or "pipeline" when given
	capped string // "cappedSize" or "cappedMax" when given
	dryRun bool
}

// collModIndex is collMod's index argument.
type collModIndex struct {
	name, keyPattern bsoncore.Value
	expire           *int64
	hidden, unique   *bool
	prepareUnique    *bool
	forceNonUnique   *bool
}

// parseCollMod parses a collMod command (types only; collModPlan checks the rest).
func parseCollMod(body bsoncore.Document) (*collModArgs, error) {
	const cmd = "collMod"
	first, _ := bsonx.FirstElement(body)
	name, err := collectionArg(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a := &collModArgs{coll: name, opts: optionSet{}}
	err = args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "index":
			var d bsoncore.Document
			if d, err = args.Doc(cmd, key, v); err == nil {
				a.index, err = parseCollModIndex(d)
			}
		case "validator", "changeStreamPreAndPostImages", "timeseries":
			_, err = args.Doc(cmd, key, v)
			a.opts[key] = v
		case "validationLevel", "validationAction":
			err = checkCollModEnum(key, v)
			a.opts[key] = v
		case "expireAfterSeconds":
			if v.Type != bsoncore.TypeString {
				_, err = args.Int64(cmd, key, v)
			}
			a.opts[key] = v
		case "viewOn", "pipeline":
			a.view = key
		case "cappedSize", "cappedMax":
			_, err = args.Int64(cmd, key, v)
			a.capped = key
		case "dryRun":
			a.dryRun, err = args.Bool(cmd, key, v)
		case "collectionUUID", "isTimeseriesNamespace":
		default:
			return false, nil
		}
		return true, err
	})
	return a, err
}

// checkCollModEnum checks validationLevel or validationAction.
func checkCollModEnum(key string, v bsoncore.Value) error {
	s, err := args.String("collMod", key, v)
	if err != nil {
		return err
	}
	if key == "validationLevel" {
		return checkEnum("collMod", key, s, "off", "strict", "moderate")
	}
	return checkEnum("collMod", key, s, "error", "warn")
}

// parseCollModIndex parses collMod's index: {keyPattern | name, ...changes}, strict as
// MongoDB's IDL.
func parseCollModIndex(d bsoncore.Document) (*collModIndex, error) {
	const cmd = "collMod.index"
	x := &collModIndex{}
	flag := func(key string, v bsoncore.Value) (*bool, error) {
		b, err := args.Bool(cmd, key, v)
		return &b, err
	}
	elems, _ := d.Elements()
	for _, el := range elems {
		key, v := el.Key(), el.Value()
		var err error
		switch key {
		case "name":
			_, err = args.String(cmd, key, v)
			x.name = v
		case "keyPattern":
			_, err = args.Doc(cmd, key, v)
			x.keyPattern = v
		case "expireAfterSeconds":
			var n int64
			n, err = args.Int64(cmd, key, v)
			x.expire = &n
		case "hidden":
			x.hidden, err = flag(key, v)
		case "unique":
			x.unique, err = flag(key, v)
		case "prepareUnique":
			x.prepareUnique, err = flag(key, v)
		case "forceNonUnique":
			x.forceNonUnique, err = flag(key, v)
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, key)
		}
		if err != nil {
			return nil, err
		}
	}
	return x, nil
}

// collMod runs the collMod command.
func (e *Executor) collMod(_ context.Context, r *request) error {
	a, err := parseCollMod(r.body)
	if err != nil {
		return err
	}
	unlock := e.cat.LockDDL()
	defer unlock()
	c := e.st.Catalog.State().Collection(r.db, a.coll)
	if c == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist")
	}
	ci, err := e.cat.Info(c)
	if err != nil {
		return err
	}
	p, err := planCollMod(a, c, ci)
	if err != nil {
		return err
	}
	if a.dryRun {
		return e.collModDryRun(a, p, ci)
	}
	if p.uniqueNew {
		if err := e.checkConvertible(ci, p.index); err != nil {
			return err
		}
	}
	if err := e.applyCollMod(c, p); err != nil {
		return err
	}
	e.log.Info("collMod", zap.String("ns", c.DB+"."+c.Name), zap.Int("changes", p.mods))
	r.out = p.appendReply(r.out)
	return nil
}

// collModDryRun checks, without changing anything, that the index can become unique.
func (e *Executor) collModDryRun(a *collModArgs, p *collModPlan, ci *catalog.Coll) error {
	if a.index == nil {
		return mongoerr.New(mongoerr.InvalidOptions, "dry run mode requires an valid index modification.")
	}
	if a.index.unique == nil || !*a.index.unique {
		return mongoerr.New(mongoerr.InvalidOptions, "dry run mode requires an index modification with unique: true.")
	}
	if p.mods > 1 {
		return mongoerr.New(mongoerr.InvalidOptions, "unique: true cannot be combined with any other modification in dry run mode.")
	}
	return e.checkConvertible(ci, p.index)
}

// checkConvertible fails with CannotConvertIndexToUnique when index x of ci has
// documents that share a key.
func (e *Executor) checkConvertible(ci *catalog.Coll, x *store.Index) error {
	for _, xi := range ci.WriteIndexes {
		if xi.Meta.ID != x.ID {
			continue
		}
		groups, truncated, err := e.indexDuplicates(ci, xi)
		if err != nil {
			return err
		}
		if len(groups) > 0 {
			return convertUniqueError(groups, truncated)
		}
	}
	return nil
}

// applyCollMod commits plan p to the catalog. A change to prepareUnique or unique is
// followed by a barrier: every write after collMod returns checks the keys as it says.
func (e *Executor) applyCollMod(c *store.Collection, p *collModPlan) error {
	if !p.changed() {
		return nil
	}
	_, err := e.st.Catalog.UpdateCollection(c.DB, c.Name, func(c *store.Collection) error {
		if p.optsChanged {
			c.Options = p.opts.doc()
		}
		if p.index != nil && p.spec != nil {
			if x := c.IndexByID(p.index.ID); x != nil {
				x.Spec = *p.spec
			}
		}
		return nil
	})
	if err != nil {
		return catalog.ChangeError(err, c.DB, c.Name)
	}
	if p.uniqueNew || p.prepNew != nil || p.forceNonUnique {
		e.cat.Barrier()
	}
	return nil
}

// maxIndexTTL is the largest expireAfterSeconds of a TTL index (an int32 in MongoDB's IDL).
const maxIndexTTL = math.MaxInt32

// checkIndexTTL is MongoDB's check of a TTL index's expireAfterSeconds in collMod.
func checkIndexTTL(n int64) error {
	if n < 0 {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option cannot be less than 0")
	}
	if n > maxIndexTTL {
		return mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
	}
	return nil
}

// setSpec returns spec with key set to v (replaced in place, or appended), or removed when
// v is nil; nil when nothing is left.
func setSpec(spec bsoncore.Document, key string, v *bsoncore.Value) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(nil)
	n, done := 0, false
	elems, _ := spec.Elements()
	for _, el := range elems {
		if el.Key() != key {
			out = append(out, el...)
			n++
			continue
		}
		if v != nil && !done {
			out = bsoncore.AppendValueElement(out, key, *v)
			n++
		}
		done = true
	}
	if v != nil && !done {
		out = bsoncore.AppendValueElement(out, key, *v)
		n++
	}
	if n == 0 {
		return nil
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// boolValue wraps a bool as a value.
func boolValue(b bool) *bsoncore.Value {
	return &bsoncore.Value{Type: bsoncore.TypeBoolean, Data: bsoncore.AppendBoolean(nil, b)}
}

// specInt64 returns a numeric option of an index spec.
func specInt64(spec bsoncore.Document, key string) (int64, bool) {
	v, ok := lookupSpec(spec, key)
	if !ok {
		return 0, false
	}
	return bsonx.NumberAsInt64(v)
}
