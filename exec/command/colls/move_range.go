package colls

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addMoveRangeCommand registers moveRange (MongoDB 6.0's successor of moveChunk; mongosh's
// sh.moveRange()).
func (h *Handlers) addMoveRangeCommand(add func(*command.Command)) {
	add(&command.Command{Name: "moveRange", Run: h.moveRange, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "move the range [min, max) of a sharded collection to a shard, splitting its partition at min and max first"})
}

// moveRangeArgs is {moveRange: ns, toShard, min?, max?}.
type moveRangeArgs struct {
	ns, to   string
	min, max bsoncore.Document
}

// parseMoveRange parses moveRange's arguments; at least one of min and max is required.
func parseMoveRange(r *command.Request) (*moveRangeArgs, error) {
	a := &moveRangeArgs{}
	first, _ := bsonx.FirstElement(r.Body)
	var err error
	if a.ns, err = args.String(r.Name, r.Name, first.Value()); err != nil {
		return nil, err
	}
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		if v.Type == bsoncore.TypeNull && (key == "min" || key == "max") {
			return true, nil // mongosh's sh.moveRange() sends an absent bound as null
		}
		switch key {
		case "toShard":
			a.to, err = args.String(r.Name, key, v)
		case "min":
			a.min, err = args.Doc(r.Name, key, v)
		case "max":
			a.max, err = args.Doc(r.Name, key, v)
		case "waitForDelete", "_waitForDelete", "secondaryThrottle", "_secondaryThrottle", "forceJumbo":
		default:
			return false, nil
		}
		return true, err
	})
	switch {
	case err != nil:
		return nil, err
	case a.to == "":
		return nil, mongoerr.New(mongoerr.Location40414, "BSON field 'moveRange.toShard' is missing but a required field")
	case a.min == nil && a.max == nil:
		return nil, mongoerr.New(mongoerr.InvalidOptions, "At least one of min or max must be specified")
	}
	return a, nil
}

// moveRange runs {moveRange: ns, toShard, min, max}: the partition holding [min, max) is
// split at min and at max where they fall inside it (on a node that owns it), then the
// part between moves online, as moveChunk moves a partition. With min alone the range runs
// to its partition's upper bound, with max alone from its partition's lower bound.
func (h *Handlers) moveRange(_ context.Context, r *command.Request) error {
	a, err := parseMoveRange(r)
	if err != nil {
		return err
	}
	db, coll, _ := strings.Cut(a.ns, ".")
	ci, err := h.shardedColl(a.ns)
	if err != nil {
		return err
	}
	dest := h.shardByName(a.to)
	if dest < 0 {
		return mongoerr.New(mongoerr.ShardNotFound, "Could not find shard %s", a.to)
	}
	start := time.Now()
	var lo uint64
	hasLo := a.min != nil
	if hasLo {
		if lo, ci, err = h.splitAtBound(ci, a.min); err != nil {
			return err
		}
	}
	if a.max != nil {
		hi, end := sharding.BoundPosition(ci, a.max)
		if !end {
			if _, ci, err = h.splitAtBound(ci, a.max); err != nil {
				return err
			}
			if !hasLo {
				lo, _ = ci.Map.Range(ci.Map.Locate(hi - 1))
			}
		} else if !hasLo {
			lo, _ = ci.Map.Range(ci.Map.Len() - 1)
		}
		// The range must end where its chunk ends (at the collection's end: position 0).
		if _, phi := ci.Map.Range(ci.Map.Locate(lo)); phi != hi && (!end || phi != 0) {
			return mongoerr.New(mongoerr.InvalidOptions, "the range [%s, %s) spans more than one chunk: move its chunks one at a time",
				bsonx.ShellDoc(chunkBound(ci, lo, false)), bsonx.ShellDoc(a.max))
		}
	}
	id := ci.Map.Partition(ci.Map.Locate(lo)).ID
	if err := h.Shards.MovePartition(db, coll, id, dest, "moveRange"); err != nil {
		return sharding.MoveError(err)
	}
	r.Out = bsoncore.AppendInt64Element(r.Out, "millis", time.Since(start).Milliseconds())
	return nil
}

// splitAtBound returns the position of bound, a shard-key document, after splitting the
// partition it falls inside there (nothing when it is a partition's lower bound already),
// and the collection as it is after the split.
func (h *Handlers) splitAtBound(ci *catalog.Coll, bound bsoncore.Document) (uint64, *catalog.Coll, error) {
	at, end := sharding.BoundPosition(ci, bound)
	if end {
		return 0, nil, mongoerr.New(mongoerr.InvalidOptions, "min %s is the collection's upper bound", bsonx.ShellDoc(bound))
	}
	if lo, _ := ci.Map.Range(ci.Map.Locate(at)); lo == at {
		return at, ci, nil
	}
	if _, err := h.Shards.SplitAt(ci, at); err != nil {
		return 0, nil, sharding.SplitError(err)
	}
	nci, err := h.Cat.Lookup(ci.Meta.DB, ci.Meta.Name)
	if err != nil || nci == nil {
		return 0, nil, sharding.MoveError(err)
	}
	return at, nci, nil
}
