package colls

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addBalancingCommands registers the commands of a collection's own balancing:
// balancerCollectionStatus, setAllowMigrations (sh.balancerCollectionStatus(),
// sh.disableMigrations() and sh.enableMigrations()) and configureCollectionBalancing.
func (h *Handlers) addBalancingCommands(add func(*command.Command)) {
	add(&command.Command{Name: "configureCollectionBalancing", Run: h.configureCollectionBalancing, Action: auth.ActionClusterAdmin,
		Help: "set a sharded collection's chunk size and whether its cold partitions merge", AdminOnly: true, Props: command.WriteConcern})
	add(&command.Command{Name: "balancerCollectionStatus", Run: h.balancerCollectionStatus, Action: auth.ActionClusterAdmin,
		Help: "whether the balancer would move a sharded collection's partitions", AdminOnly: true})
	add(&command.Command{Name: "setAllowMigrations", Run: h.setAllowMigrations, Action: auth.ActionClusterAdmin,
		Help: "allow or refuse every move of a sharded collection's partitions", AdminOnly: true, Props: command.WriteConcern})
}

// shardedNS reads the namespace that is the first field of a command and returns the
// collection's database and name.
func shardedNS(r *command.Request) (db, coll string, err error) {
	first, _ := bsonx.FirstElement(r.Body)
	ns, err := args.String(r.Name, r.Name, first.Value())
	if err != nil {
		return "", "", err
	}
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll == "" {
		return "", "", mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	return db, coll, nil
}

// balancerCollectionStatus answers {balancerCollectionStatus: ns}: the partition size at
// which the collection's partitions split (chunkSize, MiB), and whether the balancer would
// leave them where they are, with the first reason it would not.
func (h *Handlers) balancerCollectionStatus(_ context.Context, r *command.Request) error {
	db, coll, err := shardedNS(r)
	if err != nil {
		return err
	}
	ci, err := h.shardedColl(db + "." + coll)
	if err != nil {
		return err
	}
	compliant, violation := h.Shards.BalancerCompliance(ci)
	out := bsoncore.AppendInt64Element(r.Out, "chunkSize", h.Shards.MaxChunkSizeMB(ci))
	out = bsoncore.AppendBooleanElement(out, "balancerCompliant", compliant)
	if !compliant {
		out = bsoncore.AppendStringElement(out, "firstComplianceViolation", violation)
	}
	r.Out = out
	return nil
}

// setAllowMigrations answers {setAllowMigrations: ns, allowMigrations: bool}: while false,
// every move of the collection's partitions is refused (ConflictingOperationInProgress) and
// the balancer leaves them alone; splits go on.
func (h *Handlers) setAllowMigrations(_ context.Context, r *command.Request) error {
	db, coll, err := shardedNS(r)
	if err != nil {
		return err
	}
	var allow *bool
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		if key != "allowMigrations" {
			return false, nil
		}
		b, err := args.Bool(r.Name, key, v)
		allow = &b
		return true, err
	})
	if err != nil {
		return err
	}
	if allow == nil {
		return mongoerr.New(mongoerr.Location40414, "BSON field 'setAllowMigrations.allowMigrations' is missing but a required field")
	}
	return h.Shards.SetBalancing(db, coll, nil, allow)
}

// maxChunkSizeMB is the largest chunkSize configureCollectionBalancing takes (MongoDB's).
const maxChunkSizeMB = 1024

// configureCollectionBalancing answers {configureCollectionBalancing: ns, chunkSize,
// defragmentCollection, enableAutoMerger}: chunkSize (MB; 0: the server's
// --partition-max-bytes again) becomes the size above which the collection's partitions
// split, enableAutoMerger: false keeps its cold partitions apart. defragmentCollection: true
// is refused: cleave has no defragmentation (its merges of cold partitions are the
// AutoMerger's).
func (h *Handlers) configureCollectionBalancing(_ context.Context, r *command.Request) error {
	db, coll, err := shardedNS(r)
	if err != nil {
		return err
	}
	var chunkBytes *int64
	var autoMerge *bool
	err = args.ForEach(r.Name, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		switch key {
		case "chunkSize":
			mb, err := args.Int64(r.Name, key, v)
			if err != nil {
				return true, err
			}
			if mb < 0 || mb > maxChunkSizeMB {
				return true, mongoerr.New(mongoerr.InvalidOptions, "chunk size should be between 1 and %d MB, or 0 for the default, got %d", maxChunkSizeMB, mb)
			}
			b := mb << 20
			chunkBytes = &b
		case "enableAutoMerger":
			on, err := args.Bool(r.Name, key, v)
			autoMerge = &on
			return true, err
		case "defragmentCollection":
			on, err := args.Bool(r.Name, key, v)
			if err == nil && on {
				err = mongoerr.New(mongoerr.NotImplemented, "defragmentCollection is not supported by cleave: its partition manager merges cold partitions itself (enableAutoMerger)")
			}
			return true, err
		default:
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	if _, err := h.shardedColl(db + "." + coll); err != nil {
		return err
	}
	return h.Shards.ConfigureBalancing(db, coll, chunkBytes, autoMerge)
}
