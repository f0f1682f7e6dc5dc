package server

import (
	"context"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/failpoint"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.uber.org/zap"
)

// addAPITestCommands registers MongoDB's test commands of the Stable API (enableTestCommands):
// testVersion2 (in version 2 only), testVersions1And2, testDeprecation (deprecated in
// version 1) and testDeprecationInVersion2. Each answers {ok: 1} once its declaration passes.
func addAPITestCommands(add func(*command.Command)) {
	ok := func(context.Context, *command.Request) error { return nil }
	add(&command.Command{Name: "testVersion2", Run: ok, Action: auth.ActionNone, Help: "a command in API version 2 only"})
	add(&command.Command{Name: "testVersions1And2", Run: ok, Action: auth.ActionNone, Help: "a command in API versions 1 and 2", Props: command.APIV1})
	add(&command.Command{Name: "testDeprecation", Run: ok, Action: auth.ActionNone, Help: "a command deprecated in API version 1",
		Props: command.APIV1, DeprecatedIn: "1"})
	add(&command.Command{Name: "testDeprecationInVersion2", Run: ok, Action: auth.ActionNone, Help: "a command deprecated in API version 2",
		Props: command.APIV1, DeprecatedIn: "2"})
}

// AddTest registers the commands enabled by Options.TestCommands.
func (h *Handlers) AddTest(add func(*command.Command)) {
	add(&command.Command{Name: "configureFailPoint", Run: h.configureFailPoint, Action: auth.ActionClusterAdmin, Help: "modifies the settings of a fail point", AdminOnly: true})
	add(&command.Command{Name: "_cleaveRaftFault", Run: h.raftFault, Action: auth.ActionClusterAdmin, AdminOnly: true,
		Help: "test only: drops the raft messages between this node and the nodes named (a partition, made by sending it to every node)"})
	addAPITestCommands(add)
}

// raftFault sets the fault of this node's raft transport (replicated shards):
// {_cleaveRaftFault: 1, isolate: [node, ...]} drops every raft message to and from those
// nodes, as this node sees them; {_cleaveRaftFault: 1, off: true} heals. A partition that
// isolates a node is made by sending the same command to every node.
func (h *Handlers) raftFault(_ context.Context, r *command.Request) error {
	if h.Storage.Replicas == nil {
		return mongoerr.New(mongoerr.NotImplemented, "this node holds no replicas of shards (--replicas)")
	}
	if off, _ := r.Body.Lookup("off").BooleanOK(); off {
		h.Storage.Replicas.SetFault(nil)
		r.Conn.Log.Warn("raft transport fault off")
		return nil
	}
	arr, ok := r.Body.Lookup("isolate").ArrayOK()
	if !ok {
		return mongoerr.New(mongoerr.TypeMismatch, "_cleaveRaftFault: isolate must be an array of node names, or off: true")
	}
	vals, _ := arr.Values()
	nodes := make([]string, 0, len(vals))
	for _, v := range vals {
		name, ok := v.StringValueOK()
		if !ok || name == "" {
			return mongoerr.New(mongoerr.TypeMismatch, "_cleaveRaftFault: isolate must hold node names")
		}
		nodes = append(nodes, name)
	}
	h.Storage.Replicas.SetFault(nodes)
	r.Conn.Log.Warn("raft transport fault on", zap.Strings("isolate", nodes))
	return nil
}

// configureFailPoint sets the mode and data of a failpoint and answers how many times it
// had fired.
func (h *Handlers) configureFailPoint(_ context.Context, r *command.Request) error {
	first, _ := bsonx.FirstElement(r.Body)
	name, _ := first.Value().StringValueOK()
	switch name {
	case "simulateAvailableDiskSpace":
		return h.simulateAvailableDiskSpace(r)
	case "pauseCatalogWatch":
		return h.pauseCatalogWatch(r)
	case "pauseMoveBeforeFlip":
		return h.pauseGate(r, &h.BeforeFlip)
	case "failMigrationCommit":
		return h.pauseGate(r, &h.FailFlip)
	case "hangAfterStartingIndexBuild":
		return h.pauseGate(r, &h.AfterBuildStart)
	case "pauseMultiWriteBeforeLock":
		return h.pauseGate(r, &h.BeforeGroupLock)
	case "reshardingPauseRecipientDuringCloning":
		return h.pauseGate(r, &h.DuringReshardClone)
	case "pauseInsertBeforeLock":
		return h.pauseGate(r, &h.BeforeInsertLock)
	case "maxTimeAlwaysTimeOut":
		return h.maxTimeAlwaysTimeOut(r)
	case "failGetMoreAfterCursorCheckout":
		count, err := h.FailGetMore.ConfigureAll(r.Body.Lookup("mode"), r.Body.Lookup("data"))
		if err != nil {
			return err
		}
		r.Out = bsonx.AppendNumber(r.Out, "count", count)
		return nil
	}
	if name != "failCommand" {
		return mongoerr.New(mongoerr.FailPointSetFailed, "%s not found", name)
	}
	count, err := h.Fail.Configure(r.Body.Lookup("mode"), r.Body.Lookup("data"))
	if err != nil {
		return err
	}
	r.Conn.Log.Warn("set failpoint", zap.String("failpoint", name), zap.Stringer("mode", r.Body.Lookup("mode")))
	r.Out = bsonx.AppendNumber(r.Out, "count", count)
	return nil
}

// diskSimulator is a shard whose free disk space a test can pretend (store.DB's hook).
type diskSimulator interface {
	SimulateAvailableDiskSpace(n int64) (readings int64)
}

// simulateAvailableDiskSpace configures MongoDB's failpoint of that name: while it is on,
// every shard reads data.bytes free bytes on its volume instead of asking the file system,
// so writes that add data are refused with OutOfDiskSpace 14031 when that is under the
// reserve (store/space.go):
//
//	{configureFailPoint: "simulateAvailableDiskSpace", mode: "alwaysOn", data: {bytes: 0}}
//
// Any mode but "off" turns it on ({times: n} and {skip: n} count readings in mongod; here
// the simulation lasts until "off"). It answers count: the readings the previous setting
// answered.
func (h *Handlers) simulateAvailableDiskSpace(r *command.Request) error {
	on, err := failpoint.ModeOn(r.Body.Lookup("mode"))
	if err != nil {
		return err
	}
	n := int64(-1)
	if on {
		data, ok := r.Body.Lookup("data").DocumentOK()
		if !ok {
			return mongoerr.New(mongoerr.BadValue, "simulateAvailableDiskSpace needs data: {bytes: <number>}")
		}
		if n, err = args.Int64("configureFailPoint", "bytes", data.Lookup("bytes")); err != nil {
			return err
		}
		if n < 0 {
			return mongoerr.New(mongoerr.BadValue, "data.bytes must be at least 0, not %d", n)
		}
	}
	var count int64
	for _, sh := range h.Storage.Shards {
		if ds, ok := sh.(diskSimulator); ok {
			count += ds.SimulateAvailableDiskSpace(n)
		}
	}
	r.Conn.Log.Warn("set failpoint", zap.String("failpoint", "simulateAvailableDiskSpace"), zap.Int64("bytes", n))
	r.Out = bsonx.AppendNumber(r.Out, "count", count)
	return nil
}

// pauseGate sets a gate failpoint {configureFailPoint: name, mode: "alwaysOn" | "off"} and
// answers how many times it held something. Test suites only:
//   - pauseMoveBeforeFlip: a move this node runs waits under its locks after its last pass,
//     just before the ownership flip (sharding.Knobs.BeforeFlip);
//   - failMigrationCommit (MongoDB's name): a move this node runs fails at its flip, which
//     it does not send, as a refused flip (sharding.Knobs.FailFlip; a switch, not a wait):
//     the move answers InternalError and its destination deletes its copy;
//   - hangAfterStartingIndexBuild (mongod's name): an index build this node runs waits once
//     its indexes are in the catalog, not ready (ddl.Knobs.AfterBuildStart);
//   - pauseMultiWriteBeforeLock: a multi update or delete this node runs waits after reading
//     each group of documents, before locking them (write.Knobs.BeforeGroupLock);
//   - reshardingPauseRecipientDuringCloning (MongoDB's name): a layout change's copy waits
//     after its first committed batch (sharding.Knobs.DuringClone).
//   - pauseInsertBeforeLock: an insert this node runs waits after looking up its collection,
//     before locking its documents (write.Knobs.BeforeInsertLock).
func (h *Handlers) pauseGate(r *command.Request, g *failpoint.Gate) error {
	on, err := failpoint.ModeOn(r.Body.Lookup("mode"))
	if err != nil {
		return err
	}
	r.Out = bsonx.AppendNumber(r.Out, "count", g.Set(on))
	return nil
}

// pauseCatalogWatch is the failpoint {configureFailPoint: "pauseCatalogWatch", mode:
// "alwaysOn" | "off", data: {strict: true}}: while on, this node's catalog applies the
// changes other nodes commit only once something here waits for them
// (store.Catalog.HoldShared), so that it routes on its old map until an owner answers
// StaleConfig; strict, not even then (until off, or a minute), so that what waits for them
// waits, at most its own bound (10 s). It answers count, the waits for a held change since
// it was last set, and expired, how many of them gave up. Test suites only.
func (h *Handlers) pauseCatalogWatch(r *command.Request) error {
	on, err := failpoint.ModeOn(r.Body.Lookup("mode"))
	if err != nil {
		return err
	}
	if h.Remote == nil {
		return mongoerr.New(mongoerr.FailPointSetFailed, "pauseCatalogWatch needs cluster mode")
	}
	strict, _ := r.Body.Lookup("data", "strict").BooleanOK()
	waits, expired := h.Storage.Catalog.HoldStats()
	h.Storage.Catalog.HoldSharedStrictly(on, strict)
	r.Out = bsonx.AppendNumber(r.Out, "count", waits)
	r.Out = bsonx.AppendNumber(r.Out, "expired", expired)
	return nil
}

// maxTimeAlwaysTimeOut sets mongod's failpoint of that name, {configureFailPoint:
// "maxTimeAlwaysTimeOut", mode: "alwaysOn" | "off"}: while on, every command given a
// maxTimeMS fails with MaxTimeMSExpired 50 at its first interrupt check, however fast it
// runs (failpoint.MaxTime). It answers count: the commands it expired since it was last set.
func (h *Handlers) maxTimeAlwaysTimeOut(r *command.Request) error {
	on, err := failpoint.ModeOn(r.Body.Lookup("mode"))
	if err != nil {
		return err
	}
	r.Conn.Log.Warn("set failpoint", zap.String("failpoint", "maxTimeAlwaysTimeOut"), zap.Bool("on", on))
	r.Out = bsonx.AppendNumber(r.Out, "count", h.MaxTimeAlways.Set(on))
	return nil
}
