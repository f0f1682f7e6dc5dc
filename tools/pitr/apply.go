package pitr

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// event is the part of a change event a replay reads.
type event struct {
	Op          string         `bson:"operationType"`
	ClusterTime bson.Timestamp `bson:"clusterTime"`
	WallTime    time.Time      `bson:"wallTime"`
	NS          struct {
		DB   string `bson:"db"`
		Coll string `bson:"coll"`
	} `bson:"ns"`
	To struct {
		DB   string `bson:"db"`
		Coll string `bson:"coll"`
	} `bson:"to"`
	DocumentKey  bson.Raw `bson:"documentKey"`
	FullDocument bson.Raw `bson:"fullDocument"`
	Update       struct {
		Updated   bson.Raw `bson:"updatedFields"`
		Removed   []string `bson:"removedFields"`
		Truncated []struct {
			Field   string `bson:"field"`
			NewSize int32  `bson:"newSize"`
		} `bson:"truncatedArrays"`
		Ambiguous bson.Raw `bson:"disambiguatedPaths"`
	} `bson:"updateDescription"`
	Desc bson.Raw `bson:"operationDescription"`
}

// decodeEvent reads a change event.
func decodeEvent(raw bson.Raw) (*event, error) {
	var ev event
	if err := bson.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("a change event that does not decode: %w (%s)", err, raw)
	}
	return &ev, nil
}

// errNotApplied is a write that did not change the one document it names.
var errNotApplied = errors.New("the target does not hold the document the event changes")

// applyDDL makes the change of a DDL event (create, drop, rename...) on target.
func applyDDL(ctx context.Context, target *mongo.Client, db *mongo.Database, ev *event) error {
	var cmd bson.D
	switch ev.Op {
	case "create":
		// Not idIndex: create stores it among the options, and the _id index it describes
		// follows from them (a collation's).
		cmd = withDesc(bson.D{{Key: "create", Value: ev.NS.Coll}}, ev.Desc, "idIndex")
	case "drop":
		cmd = bson.D{{Key: "drop", Value: ev.NS.Coll}}
	case "dropDatabase":
		cmd = bson.D{{Key: "dropDatabase", Value: 1}}
	case "rename":
		cmd = bson.D{{Key: "renameCollection", Value: ev.NS.DB + "." + ev.NS.Coll},
			{Key: "to", Value: ev.To.DB + "." + ev.To.Coll}}
		if _, err := ev.Desc.LookupErr("dropTarget"); err == nil {
			cmd = append(cmd, bson.E{Key: "dropTarget", Value: true})
		}
		db = target.Database("admin")
	case "createIndexes":
		cmd = bson.D{{Key: "createIndexes", Value: ev.NS.Coll}, {Key: "indexes", Value: ev.Desc.Lookup("indexes")}}
	case "dropIndexes":
		names, err := indexNames(ev.Desc)
		if err != nil {
			return err
		}
		cmd = bson.D{{Key: "dropIndexes", Value: ev.NS.Coll}, {Key: "index", Value: names}}
	case "modify":
		cmd = withDesc(bson.D{{Key: "collMod", Value: ev.NS.Coll}}, ev.Desc, "")
	case "shardCollection":
		cmd = bson.D{{Key: "shardCollection", Value: ev.NS.DB + "." + ev.NS.Coll},
			{Key: "key", Value: ev.Desc.Lookup("shardKey")}}
		db = target.Database("admin")
	default:
		return fmt.Errorf("an event of type %q, which a replay does not know", ev.Op)
	}
	return db.RunCommand(ctx, cmd).Err()
}

// withDesc appends the fields of an event's operationDescription to cmd, but skip.
func withDesc(cmd bson.D, desc bson.Raw, skip string) bson.D {
	elems, _ := desc.Elements()
	for _, el := range elems {
		if el.Key() != skip {
			cmd = append(cmd, bson.E{Key: el.Key(), Value: el.Value()})
		}
	}
	return cmd
}

// indexNames returns the names of the indexes of a dropIndexes event.
func indexNames(desc bson.Raw) ([]string, error) {
	var d struct {
		Indexes []struct {
			Name string `bson:"name"`
		} `bson:"indexes"`
	}
	if err := bson.Unmarshal(desc, &d); err != nil {
		return nil, fmt.Errorf("a dropIndexes event's operationDescription: %w", err)
	}
	names := make([]string, len(d.Indexes))
	for i, x := range d.Indexes {
		names[i] = x.Name
	}
	return names, nil
}

// updateModels returns the writes of an update event's updateDescription on the document it
// names: the arrays it truncated first (a $push that keeps newSize elements), then its
// updated and removed fields, one write each (a truncation and a $set of one of the array's
// elements would conflict in one). None for an update that changed nothing.
func updateModels(ev *event) ([]mongo.WriteModel, error) {
	u := &ev.Update
	if err := checkPaths(u.Ambiguous); err != nil {
		return nil, err
	}
	var models []mongo.WriteModel
	if len(u.Truncated) > 0 {
		push := bson.D{}
		for _, t := range u.Truncated {
			push = append(push, bson.E{Key: t.Field, Value: bson.D{{Key: "$each", Value: bson.A{}}, {Key: "$slice", Value: t.NewSize}}})
		}
		models = append(models, mongo.NewUpdateOneModel().SetFilter(ev.DocumentKey).SetUpdate(bson.D{{Key: "$push", Value: push}}))
	}
	upd := bson.D{}
	if elems, _ := u.Updated.Elements(); len(elems) > 0 {
		upd = append(upd, bson.E{Key: "$set", Value: u.Updated})
	}
	if len(u.Removed) > 0 {
		unset := bson.D{}
		for _, f := range u.Removed {
			unset = append(unset, bson.E{Key: f, Value: ""})
		}
		upd = append(upd, bson.E{Key: "$unset", Value: unset})
	}
	if len(upd) > 0 {
		models = append(models, mongo.NewUpdateOneModel().SetFilter(ev.DocumentKey).SetUpdate(upd))
	}
	return models, nil
}

// checkPaths refuses the paths of disambiguatedPaths that hold a field name with a dot,
// which no $set can name ($set "a.b" is field b of a). Numeric field names are not
// ambiguous here: the replayed document has the source's shape, so "a.1" is the element or
// the field it was.
func checkPaths(ambiguous bson.Raw) error {
	elems, _ := ambiguous.Elements()
	for _, el := range elems {
		arr, ok := el.Value().ArrayOK()
		if !ok {
			continue
		}
		vals, _ := arr.Values()
		for _, v := range vals {
			if s, ok := v.StringValueOK(); ok && strings.Contains(s, ".") {
				return fmt.Errorf("the update of path %q names a field with a dot in its name, which a replay cannot set", el.Key())
			}
		}
	}
	return nil
}
