package agg

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/query"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// outStage is $out: the pipeline's output replaces a collection. The documents go into a
// temporary collection (with the target's options and indexes) through the insert path,
// which is renamed over the target at the end, so the target changes at once or not at
// all.
type outStage struct {
	target writeTarget
}

// parseOutStage parses {$out: "coll"} and {$out: {db, coll}}.
func parseOutStage(env *Env, name string, arg bsoncore.Value) (Stage, error) {
	if env.Host == nil {
		return nil, noHost(name)
	}
	s := &outStage{target: writeTarget{db: env.DB}}
	switch arg.Type {
	case bsoncore.TypeString:
		s.target.coll = arg.StringValue()
	case bsoncore.TypeEmbeddedDocument:
		if err := s.parseSpec(arg.Document()); err != nil {
			return nil, err
		}
	default:
		return nil, mongoerr.New(mongoerr.Location16990, "$out only supports a string or object argument, but found %s", bsonx.TypeName(arg.Type))
	}
	t := s.target
	switch {
	case !t.valid():
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid $out target namespace, %s", t.ns())
	case len(t.coll) >= 7 && t.coll[:7] == "system.":
		return nil, mongoerr.New(mongoerr.Location17385, "Can't $out to special collection: %s", t.coll)
	case internalDB(t.db):
		return nil, mongoerr.New(mongoerr.Location31321, "Can't $out to internal database: %s", t.db)
	}
	return s, nil
}

// parseSpec parses the {db, coll, timeseries} form.
func (s *outStage) parseSpec(d bsoncore.Document) error {
	const stage = "$out"
	haveDB, haveColl := false, false
	elems, _ := d.Elements()
	for _, el := range elems {
		var err error
		switch el.Key() {
		case "db":
			haveDB = true
			s.target.db, err = args.String(stage, "db", el.Value())
		case "coll":
			haveColl = true
			s.target.coll, err = args.String(stage, "coll", el.Value())
		case "timeseries":
			err = mongoerr.New(mongoerr.NotImplemented, "time series collections are not supported by cleave")
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '$out.%s' is an unknown field.", el.Key())
		}
		if err != nil {
			return err
		}
	}
	if !haveDB {
		return args.Missing(stage, "db")
	}
	if !haveColl {
		return args.Missing(stage, "coll")
	}
	return nil
}

// StageName implements WriteStage.
func (s *outStage) StageName() string { return "$out" }

// Open implements Stage; aggregateWrite runs write stages.
func (s *outStage) Open(stream.Stream) (stream.Stream, error) { return nil, errWriteStageOpened }

// Spec implements Stage.
func (s *outStage) Spec() bsoncore.Document {
	return StageSpec("$out", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: s.target.Spec()})
}

// Prepare implements WriteStage: mongos refuses $out to a sharded or a capped collection.
func (s *outStage) Prepare(run *WriteRun) error {
	c := run.Cat.Store().State().Collection(s.target.db, s.target.coll)
	switch {
	case c != nil && c.Sharded():
		return mongoerr.New(mongoerr.Location28769, "%s cannot be sharded", s.target.ns())
	case c != nil && catalog.IsCapped(c):
		return mongoerr.New(mongoerr.Location17152, "namespace '%s' is capped so it can't be used for $out", s.target.ns())
	}
	return nil
}

// Write implements WriteStage: it fills a temporary collection and renames it over the
// target. On failure the temporary collection is dropped and the target is unchanged.
func (s *outStage) Write(ctx context.Context, run *WriteRun, in stream.Stream) error {
	orig := run.Cat.Store().State().Collection(s.target.db, s.target.coll)
	tmp, err := s.createTemp(run.Host, orig)
	if err != nil {
		return err
	}
	if err := s.fill(ctx, run, tmp, in); err != nil {
		run.Host.DropTempCollection(tmp.Meta)
		return err
	}
	if err := s.replace(run.Host, tmp.Meta, orig); err != nil {
		run.Host.DropTempCollection(tmp.Meta)
		return err
	}
	return nil
}

// createTemp creates the temporary collection db.tmp.agg_out.<uuid> with the options and
// the (ready) indexes of orig, the target as it is now (nil if it does not exist).
func (s *outStage) createTemp(h Host, orig *store.Collection) (*catalog.Coll, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("tmp.agg_out.%x-%x-%x-%x-%x", id[0:4], id[4:6], id[6:8], id[8:10], id[10:])
	c := store.Collection{DB: s.target.db, Name: name}
	if orig != nil {
		c.Options, c.Throughput = orig.Options, orig.Throughput
		for _, x := range orig.Indexes {
			if !x.Ready {
				continue
			}
			if x.Name != store.IDIndexName {
				x.ID = 0
			}
			c.Indexes = append(c.Indexes, x)
		}
	}
	return h.CreateTempCollection(c)
}

// fill inserts the documents of in into tmp in groups, through the insert path. The first
// document that fails fails the $out.
func (s *outStage) fill(ctx context.Context, run *WriteRun, tmp *catalog.Coll, in stream.Stream) error {
	wc := write.Concern{NoJournal: !run.Sync}
	var res write.Results
	var group []bsoncore.Value
	size, base := 0, 0
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		_, err := run.Host.WritePath().Insert(ctx, tmp, group, base, true, run.Bypass, wc, &res, nil)
		if err == nil && len(res.Errs) > 0 {
			err = res.Errs[0].Err
		}
		base += len(group)
		group, size = group[:0], 0
		return err
	}
	for {
		d, err := in.Next(ctx)
		if err != nil {
			return err
		}
		if d == nil {
			break
		}
		doc := append(bsoncore.Document(nil), d...)
		group = append(group, bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc})
		size += len(doc)
		if len(group) >= write.InsertGroupDocs || size >= write.InsertGroupBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	err := flush()
	run.Host.Written(res.N, 0)
	run.Charge += res.Charge
	return err
}

// replace renames tmp over the target, unless the target changed meanwhile: MongoDB's $out
// fails when the target's options or indexes changed during the aggregation.
func (s *outStage) replace(h Host, tmp, orig *store.Collection) error {
	t := s.target
	return h.ReplaceCollection(tmp, t.db, t.coll, func(cur *store.Collection) error {
		if cur != nil && cur.Sharded() {
			return mongoerr.New(mongoerr.Location28769, "%s cannot be sharded", t.ns())
		}
		if !bytes.Equal(targetOptions(orig), targetOptions(cur)) {
			return mongoerr.New(mongoerr.CommandFailed, "collection options of target collection %s changed during processing. Original options: %s, new options: %s",
				t.ns(), docString(targetOptions(orig)), docString(targetOptions(cur)))
		}
		if !sameIndexes(orig, cur) {
			return mongoerr.New(mongoerr.CommandFailed, "indexes of target collection %s changed during processing.", t.ns())
		}
		return nil
	})
}

// targetOptions returns the options of c (nil for none or no collection).
func targetOptions(c *store.Collection) bsoncore.Document {
	if c == nil {
		return nil
	}
	return c.Options
}

// docString prints an options document as the shell does ({} for none).
func docString(d bsoncore.Document) string {
	if d == nil {
		d = query.EmptyDoc
	}
	return bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
}

// sameIndexes reports whether a and b (either nil) have the same ready indexes.
func sameIndexes(a, b *store.Collection) bool {
	ready := func(c *store.Collection) map[string]store.Index {
		m := map[string]store.Index{}
		if c == nil {
			return m
		}
		for _, x := range c.Indexes {
			if x.Ready {
				m[x.Name] = x
			}
		}
		return m
	}
	ma, mb := ready(a), ready(b)
	if len(ma) != len(mb) {
		return false
	}
	for name, x := range ma {
		y, ok := mb[name]
		if !ok || !bytes.Equal(x.Key, y.Key) || !bytes.Equal(x.Spec, y.Spec) {
			return false
		}
	}
	return true
}
