package ddl

import (
	"bytes"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// CollModPlan is what a collMod changes, checked against the collection as MongoDB's
// parseCollModRequest checks it, before anything changes.
type CollModPlan struct {
	Mods int // modifications requested, no-ops included (MongoDB's numModifications)
	// Index is the target of the index argument; spec its new spec when it changes.
	Index *store.Index
	Spec  *bsoncore.Document
	// The reply's fields: nil when not reported.
	expireOld, expireNew *int64
	hiddenOld, hiddenNew *bool
	prepOld, PrepNew     *bool
	UniqueNew            bool
	ForceNonUnique       bool
	// Opts are the collection's new options when optsChanged.
	Opts        CollOptions
	OptsChanged bool
}

// Changed reports whether p changes the catalog.
func (p *CollModPlan) Changed() bool { return p.OptsChanged || p.Spec != nil }

// AppendReply appends the reply fields of p's changes.
func (p *CollModPlan) AppendReply(out []byte) []byte {
	if p.expireOld != nil {
		out = bsoncore.AppendInt64Element(out, "expireAfterSeconds_old", *p.expireOld)
	}
	if p.expireNew != nil {
		out = bsoncore.AppendInt64Element(out, "expireAfterSeconds_new", *p.expireNew)
	}
	if p.hiddenNew != nil {
		out = bsoncore.AppendBooleanElement(out, "hidden_old", *p.hiddenOld)
		out = bsoncore.AppendBooleanElement(out, "hidden_new", *p.hiddenNew)
	}
	if p.UniqueNew {
		out = bsoncore.AppendBooleanElement(out, "unique_new", true)
	}
	if p.PrepNew != nil {
		out = bsoncore.AppendBooleanElement(out, "prepareUnique_old", *p.prepOld)
		out = bsoncore.AppendBooleanElement(out, "prepareUnique_new", *p.PrepNew)
	}
	if p.ForceNonUnique {
		out = bsoncore.AppendBooleanElement(out, "forceNonUnique_new", true)
	}
	return out
}

// IndexChange returns the index p changes as a modify change event reports it, MongoDB's
// oplog entry of collMod: now is {name} and the new values of what changed, before the old
// values ({expireAfterSeconds, hidden, prepareUnique}); both nil when p changes no index.
func (p *CollModPlan) IndexChange() (now, before bsoncore.Document) {
	if p.Index == nil {
		return nil, nil
	}
	nb := bsoncore.NewDocumentBuilder().AppendString("name", p.Index.Name)
	ob := bsoncore.NewDocumentBuilder()
	if p.expireNew != nil {
		nb.AppendInt64("expireAfterSeconds", *p.expireNew)
		if p.expireOld != nil {
			ob.AppendInt64("expireAfterSeconds", *p.expireOld)
		}
	}
	if p.hiddenNew != nil {
		nb.AppendBoolean("hidden", *p.hiddenNew)
		ob.AppendBoolean("hidden", *p.hiddenOld)
	}
	if p.UniqueNew {
		nb.AppendBoolean("unique", true)
	}
	if p.PrepNew != nil {
		nb.AppendBoolean("prepareUnique", *p.PrepNew)
		ob.AppendBoolean("prepareUnique", *p.prepOld)
	}
	if p.ForceNonUnique {
		nb.AppendBoolean("forceNonUnique", true)
	}
	return nb.Build(), ob.Build()
}

// PlanCollMod checks collMod a against collection c (compiled as ci) and returns its plan.
func PlanCollMod(a *CollModArgs, c *store.Collection, ci *catalog.Coll) (*CollModPlan, error) {
	p := &CollModPlan{Opts: optionsOf(c.Options)}
	if err := p.planCapped(a, c); err != nil {
		return nil, err
	}
	if a.Index != nil {
		if err := p.planIndex(a.Index, c, ci); err != nil {
			return nil, err
		}
	}
	if err := p.planOptions(a, ci); err != nil {
		return nil, err
	}
	if p.PrepNew != nil && p.Mods > 1 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "prepareUnique cannot be combined with any other modification.")
	}
	return p, nil
}

// planIndex checks collMod's index argument and plans its changes.
func (p *CollModPlan) planIndex(a *CollModIndex, c *store.Collection, ci *catalog.Coll) error {
	if err := checkCollModIndex(a, ci); err != nil {
		return err
	}
	x, err := findCollModIndex(a, c, ci)
	if err != nil {
		return err
	}
	p.Index = x
	spec := x.Spec
	if a.expire != nil {
		p.Mods++
		if spec, err = p.planIndexTTL(x, spec, *a.expire); err != nil {
			return err
		}
	}
	if a.Unique != nil {
		p.Mods++
		if spec, err = p.planUnique(x, spec, *a.Unique); err != nil {
			return err
		}
	}
	if a.hidden != nil {
		p.Mods++
		if x.Name == store.IDIndexName {
			return mongoerr.New(mongoerr.BadValue, "can't hide _id index")
		}
		if old := catalog.SpecBool(spec, "hidden"); old != *a.hidden {
			p.hiddenOld, p.hiddenNew = &old, a.hidden
			spec = setSpec(spec, "hidden", flagValue(*a.hidden))
		}
	}
	if a.prepareUnique != nil {
		p.Mods++
		old := catalog.SpecBool(spec, "prepareUnique")
		if old != *a.prepareUnique && !catalog.SpecBool(x.Spec, "unique") && x.Name != store.IDIndexName {
			p.prepOld, p.PrepNew = &old, a.prepareUnique
			spec = setSpec(spec, "prepareUnique", flagValue(*a.prepareUnique))
		}
	}
	if a.forceNonUnique != nil {
		p.Mods++
		if spec, err = p.planForceNonUnique(x, spec, *a.forceNonUnique); err != nil {
			return err
		}
	}
	if !bytes.Equal(spec, x.Spec) {
		p.Spec = &spec
	}
	return nil
}

// flagValue is the spec value of a boolean index option: true, or nil (removed) for
// false, as MongoDB removes hidden and prepareUnique when they are switched off.
func flagValue(b bool) *bsoncore.Value {
	if !b {
		return nil
	}
	return boolValue(true)
}

// checkCollModIndex applies the checks of collMod's index argument that need no index.
func checkCollModIndex(a *CollModIndex, ci *catalog.Coll) error {
	switch {
	case a.name.Type != 0 && a.keyPattern.Type != 0:
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot specify both key pattern and name.")
	case a.name.Type == 0 && a.keyPattern.Type == 0:
		return mongoerr.New(mongoerr.InvalidOptions, "Must specify either index name or key pattern.")
	case a.expire == nil && a.hidden == nil && a.Unique == nil && a.prepareUnique == nil && a.forceNonUnique == nil:
		return mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds, hidden, unique, or prepareUnique field")
	case a.Unique != nil && a.forceNonUnique != nil:
		return mongoerr.New(mongoerr.InvalidOptions, "collMod does not support 'unique' and 'forceNonUnique' options at the same time")
	}
	if a.expire != nil {
		if ci.TS != nil {
			return mongoerr.New(mongoerr.InvalidOptions, "TTL indexes are not supported for time-series collections. Please refer to the documentation and use the top-level 'expireAfterSeconds' option instead")
		}
		if err := checkIndexTTL(*a.expire); err != nil {
			return err
		}
	}
	if ci.TS != nil && (a.Unique != nil || a.prepareUnique != nil) {
		return mongoerr.New(mongoerr.InvalidOptions, "Unique indexes are not supported on time-series collections")
	}
	if a.hidden != nil && ci.Clustered {
		spec := catalog.ClusteredOf(ci.Meta.Options)
		name, _ := spec.Lookup("name").StringValueOK()
		key, _ := spec.Lookup("key").DocumentOK()
		if s, ok := a.name.StringValueOK(); ok && s == name ||
			a.keyPattern.Type != 0 && bsonx.CompareDocuments(a.keyPattern.Document(), key) == 0 {
			return mongoerr.New(mongoerr.Location6011800, "The 'hidden' option is not supported for a clusteredIndex")
		}
	}
	return nil
}

// findCollModIndex returns the ready index collMod's index argument names. The _id index
// of a clustered or time-series collection is not one MongoDB would find.
func findCollModIndex(a *CollModIndex, c *store.Collection, ci *catalog.Coll) (*store.Index, error) {
	ns := c.DB + "." + c.Name
	visible := func(x *store.Index) bool {
		return x.Ready && (x.Name != store.IDIndexName || (ci.TS == nil && !ci.Clustered))
	}
	if name, ok := a.name.StringValueOK(); ok {
		if x := c.Index(name); x != nil && visible(x) {
			return x, nil
		}
		return nil, mongoerr.New(mongoerr.IndexNotFound, "cannot find index %s for ns %s", name, ns)
	}
	var found []*store.Index
	for i := range c.Indexes {
		x := &c.Indexes[i]
		if visible(x) && bsonx.CompareDocuments(x.Key, a.keyPattern.Document()) == 0 {
			found = append(found, x)
		}
	}
	switch len(found) {
	case 0:
		return nil, mongoerr.New(mongoerr.IndexNotFound, "cannot find index %s for ns %s", bsonx.ShellString(a.keyPattern), ns)
	case 1:
		return found[0], nil
	}
	return nil, mongoerr.New(mongoerr.AmbiguousIndexKeyPattern, "index keyPattern %s matches %d indexes, must use index name. Conflicting indexes:%s, %s",
		bsonx.ShellString(a.keyPattern), len(found), SpecString(found[0]), SpecString(found[1]))
}

// planIndexTTL plans a change of index x's expireAfterSeconds to n.
func (p *CollModPlan) planIndexTTL(x *store.Index, spec bsoncore.Document, n int64) (bsoncore.Document, error) {
	old, ok := specInt64(spec, "expireAfterSeconds")
	if !ok {
		if x.Name == store.IDIndexName {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "the _id field does not support TTL indexes")
		}
		if elems, _ := x.Key.Elements(); len(elems) != 1 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "TTL indexes are single-field indexes, compound indexes do not support TTL")
		}
	} else {
		p.expireOld = &old
	}
	p.expireNew = &n
	if ok && old == n {
		return spec, nil
	}
	v := bsonx.Int32Value(int32(n))
	return setSpec(spec, "expireAfterSeconds", &v), nil
}

// planUnique plans the conversion of index x to unique (the second step, after
// prepareUnique); converting a unique index is a no-op.
func (p *CollModPlan) planUnique(x *store.Index, spec bsoncore.Document, unique bool) (bsoncore.Document, error) {
	if !unique {
		return nil, mongoerr.New(mongoerr.BadValue, "Cannot make index non-unique")
	}
	if x.Name == store.IDIndexName || catalog.SpecBool(spec, "unique") {
		return spec, nil
	}
	if !catalog.SpecBool(spec, "prepareUnique") {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.")
	}
	p.UniqueNew = true
	spec = setSpec(spec, "unique", boolValue(true))
	return setSpec(spec, "prepareUnique", nil), nil
}

// planForceNonUnique plans making unique index x non-unique.
func (p *CollModPlan) planForceNonUnique(x *store.Index, spec bsoncore.Document, force bool) (bsoncore.Document, error) {
	if !force {
		return nil, mongoerr.New(mongoerr.BadValue, "'forceNonUnique: false' is not supported")
	}
	if x.Name == store.IDIndexName {
		return nil, mongoerr.New(mongoerr.BadValue, "The _id index cannot be made non-unique")
	}
	if !catalog.SpecBool(spec, "unique") {
		return spec, nil
	}
	p.ForceNonUnique = true
	return setSpec(spec, "unique", nil), nil
}

// planOptions plans the collection-level options of collMod a.
func (p *CollModPlan) planOptions(a *CollModArgs, ci *catalog.Coll) error {
	if a.view != "" {
		p.Mods++
		return mongoerr.New(mongoerr.InvalidOptions, "option only supported on a view: %s", a.view)
	}
	for _, key := range []string{"validator", "validationLevel", "validationAction", "changeStreamPreAndPostImages"} {
		if _, ok := a.opts[key]; ok && ci.TS != nil {
			return mongoerr.New(mongoerr.InvalidOptions, "option not supported on a time-series collection: %s", key)
		}
	}
	if err := p.planValidation(a.opts); err != nil {
		return err
	}
	if v, ok := a.opts["changeStreamPreAndPostImages"]; ok {
		p.Mods++
		enabled, err := parsePrePostImages("collMod", v.Document())
		if err != nil {
			return err
		}
		p.setOption("changeStreamPreAndPostImages", enabled, bsonx.DocValue(prePostImagesDoc))
	}
	if v, ok := a.opts["expireAfterSeconds"]; ok {
		p.Mods++
		if err := p.planExpire(v, ci); err != nil {
			return err
		}
	}
	if v, ok := a.opts["timeseries"]; ok {
		p.Mods++
		if ci.TS == nil {
			return mongoerr.New(mongoerr.InvalidOptions, "option only supported on a time-series collection: timeseries")
		}
		t := *ci.TS
		changed, err := collModTimeseries(&t, v.Document())
		if err != nil {
			return err
		}
		if changed {
			p.setOption("timeseries", true, bsonx.DocValue(t.Doc()))
		}
	}
	return nil
}

// planCapped plans cappedSize and cappedMax: the new bounds of a capped collection, which
// loses its excess documents at its next insert (write.Writer's evictCapped), as in MongoDB.
func (p *CollModPlan) planCapped(a *CollModArgs, c *store.Collection) error {
	if a.cappedSize == nil && a.cappedMax == nil {
		return nil
	}
	if !catalog.IsCapped(c) {
		return mongoerr.New(mongoerr.InvalidOptions, "Collection must be capped.")
	}
	if a.cappedSize != nil {
		p.setOption("size", true, numberValue(*a.cappedSize))
	}
	if a.cappedMax != nil {
		p.setOption("max", true, numberValue(*a.cappedMax))
	}
	return nil
}

// setOption sets (set) or removes collection option key, noting a change.
func (p *CollModPlan) setOption(key string, set bool, v bsoncore.Value) {
	old, had := p.Opts[key]
	switch {
	case set && (!had || old.Type != v.Type || !bytes.Equal(old.Data, v.Data)):
		p.Opts[key] = v
		p.OptsChanged = true
	case !set && had:
		delete(p.Opts, key)
		p.OptsChanged = true
	}
}

// planValidation plans validator, validationLevel and validationAction. An empty validator
// removes the validator, as in MongoDB.
func (p *CollModPlan) planValidation(given CollOptions) error {
	if v, ok := given["validator"]; ok {
		p.Mods++
		if _, err := query.CompileFilter(v.Document()); err != nil {
			return err
		}
		p.setOption("validator", len(v.Document()) > 5, v)
		if _, ok := p.Opts["validator"]; ok {
			if _, ok := p.Opts["validationLevel"]; !ok {
				p.setOption("validationLevel", true, bsonx.StringValue("strict"))
			}
			if _, ok := p.Opts["validationAction"]; !ok {
				p.setOption("validationAction", true, bsonx.StringValue("error"))
			}
		}
	}
	for _, key := range []string{"validationLevel", "validationAction"} {
		if v, ok := given[key]; ok {
			p.Mods++
			p.setOption(key, true, v)
		}
	}
	return nil
}

// planExpire plans the collection-level expireAfterSeconds of a clustered or time-series
// collection: a number of seconds, or "off".
func (p *CollModPlan) planExpire(v bsoncore.Value, ci *catalog.Coll) error {
	if ci.TS == nil && !ci.Clustered {
		return mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' option is only supported on collections clustered by _id")
	}
	if s, ok := v.StringValueOK(); ok {
		if s != "off" {
			return mongoerr.New(mongoerr.InvalidOptions, "Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. Got: '%s'. Accepted value is 'off'", s)
		}
		p.setOption("expireAfterSeconds", false, bsoncore.Value{})
		return nil
	}
	n, _ := bsonx.NumberAsInt64(v)
	if err := checkClusteredTTL(n); err != nil {
		return err
	}
	p.setOption("expireAfterSeconds", true, bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, n)})
	return nil
}
