package colls

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addSplitCommand registers split.
func (h *Handlers) addSplitCommand(add func(*command.Command)) {
	add(&command.Command{Name: "split", Run: h.split, Action: auth.ActionClusterAdmin, Help: "split a partition at a shard-key value, or at its median document", AdminOnly: true})
}

// splitArgs are split's arguments: exactly one of find, bounds and middle.
type splitArgs struct {
	ns               string
	find, middle     bsoncore.Document
	boundLo, boundHi bsoncore.Document
	hasBounds        bool
}

// parseSplit parses {split: ns, find | bounds | middle} with mongos' refusals.
func parseSplit(r *command.Request) (*splitArgs, error) {
	const cmd = "split"
	first, _ := bsonx.FirstElement(r.Body)
	a := &splitArgs{}
	var err error
	if a.ns, err = args.String(cmd, cmd, first.Value()); err != nil {
		return nil, err
	}
	err = args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "find":
			a.find, err = args.Doc(cmd, key, v)
		case "middle":
			a.middle, err = args.Doc(cmd, key, v)
		case "bounds":
			var arr bsoncore.Array
			if arr, err = args.Array(cmd, key, v); err == nil {
				err = a.setBounds(arr)
			}
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	bad := func(msg string) error { return mongoerr.New(mongoerr.BadValue, "%s", msg) }
	switch {
	case len(a.find) > 5 && a.hasBounds:
		return nil, bad("cannot specify bounds and find at the same time")
	case len(a.find) <= 5 && !a.hasBounds && len(a.middle) <= 5:
		return nil, bad("need to specify find/bounds or middle")
	case len(a.find) > 5 && len(a.middle) > 5:
		return nil, bad("cannot specify find and middle together")
	case a.hasBounds && len(a.middle) > 5:
		return nil, bad("cannot specify bounds and middle together")
	}
	return a, nil
}

// setBounds reads bounds [min, max].
func (a *splitArgs) setBounds(arr bsoncore.Array) error {
	vals, _ := arr.Values()
	if len(vals) == 0 {
		return nil
	}
	if len(vals) < 2 {
		return mongoerr.New(mongoerr.BadValue, "upper bound not specified")
	}
	lo, ok1 := vals[0].DocumentOK()
	hi, ok2 := vals[1].DocumentOK()
	if !ok1 || !ok2 {
		return mongoerr.New(mongoerr.BadValue, "bounds must be shard key documents: [min, max]")
	}
	a.boundLo, a.boundHi, a.hasBounds = lo, hi, true
	return nil
}

// split runs {split: ns, find | bounds | middle}: with middle, the partition holding that
// key splits there; with find (the partition holding the document's key) or bounds (the
// partition with exactly those bounds), at its median document. In cluster mode the node
// owning the partition splits it (exec/sharding/split_manual.go).
func (h *Handlers) split(_ context.Context, r *command.Request) error {
	a, err := parseSplit(r)
	if err != nil {
		return err
	}
	ci, err := h.shardedColl(a.ns)
	if err != nil {
		return err
	}
	var at uint64
	switch {
	case len(a.middle) > 5:
		if at, err = middlePosition(ci, a.middle); err != nil {
			return err
		}
	case a.hasBounds:
		i, err := chunkWithBounds(ci, a.boundLo, a.boundHi)
		if err != nil {
			return err
		}
		_, err = h.Shards.SplitMedian(ci, i)
		return sharding.SplitError(err)
	default:
		pos, err := ci.ShardHash(a.find)
		if err != nil {
			return err
		}
		_, err = h.Shards.SplitMedian(ci, ci.Map.Locate(pos))
		return sharding.SplitError(err)
	}
	_, err = h.Shards.SplitAt(ci, at)
	return sharding.SplitError(err)
}

// middlePosition returns the position split's middle stands for: a whole shard key (a
// ranged key's values, a hashed key's NumberLong), strictly inside its partition.
func middlePosition(ci *catalog.Coll, middle bsoncore.Document) (uint64, error) {
	elems, _ := middle.Elements()
	valid := len(elems) == len(ci.ShardKey)
	for i := 0; valid && i < len(elems); i++ {
		valid = elems[i].Key() == ci.ShardKey[i].Path
		if !ci.Ranged && i == ci.Hashed {
			valid = valid && elems[i].Value().Type == bsoncore.TypeInt64
		}
	}
	key := bsonx.ShellDoc(ci.Meta.ShardKey)
	if !valid {
		return 0, mongoerr.New(mongoerr.BadValue, "new split key %s is not valid for shard key pattern %s", bsonx.ShellDoc(middle), key)
	}
	at, end := sharding.BoundPosition(ci, middle)
	i := ci.Map.Locate(at)
	if lo, hi := ci.Map.Range(i); end || at == lo {
		if end {
			i = ci.Map.Len() - 1
			lo, hi = ci.Map.Range(i)
		}
		return 0, mongoerr.New(mongoerr.BadValue, "new split key %s is a boundary key of existing chunk [%s,%s)",
			bsonx.ShellDoc(middle), bsonx.ShellDoc(chunkBound(ci, lo, false)), bsonx.ShellDoc(chunkBound(ci, hi, hi == 0)))
	}
	return at, nil
}

// chunkWithBounds returns the index of ci's partition whose bounds are exactly [lo, hi).
func chunkWithBounds(ci *catalog.Coll, lo, hi bsoncore.Document) (int, error) {
	plo, _ := sharding.BoundPosition(ci, lo)
	phi, hiEnd := sharding.BoundPosition(ci, hi)
	i := ci.Map.Locate(plo)
	rlo, rhi := ci.Map.Range(i)
	if rlo != plo || (hiEnd != (rhi == 0)) || (!hiEnd && rhi != phi) {
		return 0, mongoerr.New(mongoerr.BadValue, "no chunk found with the shard key bounds [%s, %s)", bsonx.ShellDoc(lo), bsonx.ShellDoc(hi))
	}
	return i, nil
}

// chunkBound returns the bound at position h as config.chunks shows it (MaxKey for end).
func chunkBound(ci *catalog.Coll, h uint64, end bool) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for i, f := range ci.ShardKey {
		switch {
		case end:
			b.AppendMaxKey(f.Path)
		case h == 0:
			b.AppendMinKey(f.Path)
		case ci.Ranged:
			b.AppendValue(f.Path, ci.RangeBounds(h)[i])
		case i == ci.Hashed:
			b.AppendInt64(f.Path, shard.HashToInt64(h))
		default:
			b.AppendMinKey(f.Path)
		}
	}
	return b.Build()
}
