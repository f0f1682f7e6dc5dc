package colls

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// convertToCapped and cloneCollectionAsCapped copy a collection, in its natural order, into
// a new capped collection (catalog.Capped) of the given size, keeping the newest documents
// that fit and only the _id index, as MongoDB does; convertToCapped then replaces the
// source with it by a rename. The copy runs under the DDL lock and every key lock (no write
// anywhere meanwhile, as MongoDB's exclusive lock), into one atomic batch: a crash leaves the
// source whole, and at worst a temporary collection of convertToCapped's.

// addCappedCommands registers convertToCapped and cloneCollectionAsCapped.
func (h *Handlers) addCappedCommands(add func(*command.Command)) {
	add(&command.Command{Name: "convertToCapped", Run: h.convertToCapped, Action: auth.ActionDDL, Help: "convert a collection to a capped collection"})
	add(&command.Command{Name: "cloneCollectionAsCapped", Run: h.cloneCollectionAsCapped, Action: auth.ActionDDL, Help: "copy a collection into a new capped collection"})
}

// cappedSizeArg parses the size of convertToCapped and cloneCollectionAsCapped.
func cappedSizeArg(cmd string, v bsoncore.Value) (int64, error) {
	f, ok := bsonx.NumberAsFloat64(v)
	if !ok {
		return 0, args.WrongType(cmd, "size", v.Type, "double")
	}
	if f <= 0 || f > 1<<50 {
		return 0, mongoerr.New(mongoerr.BadValue, "Invalid size: %v. The size must be greater than 0 and at most 1 PB.", f)
	}
	return int64(f), nil
}

// convertToCapped answers {convertToCapped: coll, size}.
func (h *Handlers) convertToCapped(ctx context.Context, r *command.Request) error {
	const cmd = "convertToCapped"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	size, err := requiredSize(cmd, r.Body)
	if err != nil {
		return err
	}
	unlock, err := h.LockDDL(ctx, "convertToCapped", r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	src, err := h.cappedSource(r.DB, name, cmd)
	if err != nil {
		return err
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	tmp := "tmp" + hex.EncodeToString(rnd[:]) + ".convertToCapped." + name
	if err := h.copyToCapped(src, r.DB, tmp, size); err != nil {
		return err
	}
	_, dropped, err := h.Storage.Catalog.RenameCollection(r.DB, tmp, r.DB, name, true)
	if err != nil {
		return catalog.StoreError(err)
	}
	if dropped != nil {
		h.Cat.DeleteData(dropped)
	}
	h.Log.Info("converted collection to capped", zap.String("ns", r.DB+"."+name), zap.Int64("size", size))
	return nil
}

// cloneCollectionAsCapped answers {cloneCollectionAsCapped: coll, toCollection, size}.
func (h *Handlers) cloneCollectionAsCapped(ctx context.Context, r *command.Request) error {
	const cmd = "cloneCollectionAsCapped"
	first, _ := bsonx.FirstElement(r.Body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	v, err := r.Body.LookupErr("toCollection")
	if err != nil {
		return args.Missing(cmd, "toCollection")
	}
	to, err := args.String(cmd, "toCollection", v)
	if err != nil {
		return err
	}
	if err := catalog.ValidateCollName(r.DB, to); err != nil {
		return err
	}
	size, err := requiredSize(cmd, r.Body)
	if err != nil {
		return err
	}
	unlock, err := h.LockDDL(ctx, "cloneCollectionAsCapped", r.Body)
	if err != nil {
		return err
	}
	defer unlock()
	src, err := h.cappedSource(r.DB, name, cmd)
	if err != nil {
		return err
	}
	if h.Storage.Catalog.State().Collection(r.DB, to) != nil {
		return mongoerr.New(mongoerr.NamespaceExists, "cloneCollectionAsCapped failed - destination collection %s.%s already exists. source: %s.%s destination: %s.%s",
			r.DB, to, r.DB, name, r.DB, to)
	}
	if err := h.copyToCapped(src, r.DB, to, size); err != nil {
		return err
	}
	h.Log.Info("cloned collection as capped", zap.String("from", r.DB+"."+name), zap.String("to", r.DB+"."+to))
	return nil
}

// requiredSize returns the size argument of cmd.
func requiredSize(cmd string, body bsoncore.Document) (int64, error) {
	v, err := body.LookupErr("size")
	if err != nil {
		return 0, args.Missing(cmd, "size")
	}
	return cappedSizeArg(cmd, v)
}

// cappedSource returns the collection db.name to copy into a capped collection: it must
// exist, and be neither a view nor sharded.
func (h *Handlers) cappedSource(db, name, cmd string) (*catalog.Coll, error) {
	src, err := h.Cat.Lookup(db, name)
	switch {
	case err != nil:
		return nil, err
	case src == nil:
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "source collection %s.%s does not exist", db, name)
	case src.View != nil:
		return nil, mongoerr.New(mongoerr.CommandNotSupportedOnView, "%s is not supported on a view: %s.%s", cmd, db, name)
	case src.Meta.Sharded():
		return nil, mongoerr.New(mongoerr.IllegalOperation, "%s is not supported on a sharded collection: %s.%s", cmd, db, name)
	case src.TS != nil || src.Clustered:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "%s is not supported on a time-series or clustered collection: %s.%s", cmd, db, name)
	}
	return src, nil
}

// copyToCapped creates capped collection db.to of size bytes with src's other options and
// copies into it the newest documents of src (in its natural order) that fit. The caller
// holds the DDL lock.
func (h *Handlers) copyToCapped(src *catalog.Coll, db, to string, size int64) error {
	opts := ddl.CappedOptions(src.Meta.Options, size)
	m, err := h.Storage.Catalog.CreateCollection(store.Collection{DB: db, Name: to, Options: opts})
	if err != nil {
		return catalog.ChangeError(err, db, to)
	}
	dst, err := h.Cat.Info(m)
	if err == nil {
		err = h.fillCapped(src, dst)
	}
	if err != nil {
		if c, derr := h.Storage.Catalog.DropCollection(db, to); derr == nil {
			h.Cat.DeleteData(c)
		}
		return err
	}
	return nil
}

// fillCapped copies the newest documents of src that fit the bounds of dst, an empty capped
// collection, giving them record ids 1, 2, ... in src's natural order.
func (h *Handlers) fillCapped(src, dst *catalog.Coll) error {
	unlock := h.Cat.Locks().LockAll() // no writer anywhere while the source is read
	defer unlock()
	from := h.Storage.Shards[src.Map.Partition(0).Shard]
	var sizes []int64
	var total int64
	err := eachDoc(from, src.Meta.ID, func(_, doc []byte) error {
		sizes = append(sizes, int64(len(doc)))
		total += int64(len(doc))
		return nil
	})
	if err != nil {
		return err
	}
	skip := 0 // the oldest documents that do not fit
	for n := int64(len(sizes)); skip < len(sizes) && dst.Capped.Over(n, total); skip++ {
		total -= sizes[skip]
		n--
	}
	b := h.Storage.Shards[dst.Map.Partition(0).Shard].NewBatch()
	defer b.Close()
	i, rid := 0, uint64(0)
	err = eachDoc(from, src.Meta.ID, func(id, doc []byte) error {
		if i++; i <= skip {
			return nil
		}
		rid++
		b.SetDoc(dst.Meta.ID, rid, id, doc)
		b.SetIndex(dst.Meta.ID, store.IDIndexID, id, rid, id)
		b.AddStats(dst.Meta.ID, rid, 1, int64(len(doc)))
		return nil
	})
	if err != nil {
		return err
	}
	return catalog.StoreError(b.Commit(true))
}

// eachDoc calls fn with the encoded _id and the BSON of every document of coll on shard db,
// in key order.
func eachDoc(db catalog.Shard, coll store.CollID, fn func(id, doc []byte) error) error {
	it, err := db.NewDocIter(coll, 0, 0)
	if err != nil {
		return catalog.StoreError(err)
	}
	for it.Next() {
		if err := fn(it.ID(), it.Doc()); err != nil {
			return errors.Join(err, it.Close())
		}
	}
	err = it.Err()
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return catalog.StoreError(err)
}
