package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cleavedb/cleave/auth"
	"github.com/cleavedb/cleave/console"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/sharding"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/store"
)

// Console returns the web console's view of the server (package console declares it): the
// same figures partitionStats, serverStatus.sharding.partitionManager and config.shards
// report, read without a command.
func (e *Server) Console() console.Source { return consoleSource{e} }

// consoleSource implements console.Source over the server's services.
type consoleSource struct{ e *Server }

// Databases implements console.Source.
func (s consoleSource) Databases() []console.Database {
	if s.e.Cat == nil {
		return nil
	}
	st := s.e.Storage.Catalog.State()
	var out []console.Database
	for _, d := range st.Databases() {
		db := console.Database{Name: d.Name}
		for _, c := range st.Collections(d.Name) {
			ci, err := s.e.Cat.Info(c)
			if err != nil {
				continue // a record that does not compile serves no requests either
			}
			sum := console.CollectionSummary{Name: c.Name, ShardKey: shardKey(ci), Partitions: ci.Map.Len(),
				Throughput: sharding.Throughput(st, ci.Meta).RU}
			for _, p := range s.partitions(ci, st) {
				sum.Documents += p.Documents
				sum.Bytes += p.Bytes
				sum.RUPerSec += p.RUPerSec
				sum.Throttled += p.Throttled
			}
			db.Collections = append(db.Collections, sum)
		}
		out = append(out, db)
	}
	return out
}

// Collection implements console.Source.
func (s consoleSource) Collection(db, name string) (console.Collection, bool) {
	if s.e.Cat == nil {
		return console.Collection{}, false
	}
	ci, err := s.e.Cat.Lookup(db, name)
	if err != nil || ci == nil {
		return console.Collection{}, false
	}
	st := s.e.Storage.Catalog.State()
	prov := sharding.Throughput(st, ci.Meta)
	c := console.Collection{DB: db, Name: name, ShardKey: shardKey(ci), Throughput: prov.RU, Autoscale: prov.Autoscale,
		Partitions: s.partitions(ci, st)}
	for _, h := range s.e.Shards.HotKeys(ci.Meta.ID) {
		c.HotKeys = append(c.HotKeys, console.HotKey{Partition: h.ID, Key: sharding.HotKeyLabel(h.Label), Share: h.Share,
			RUPerSec: h.RUPerSec, Bytes: h.Bytes, SingleKey: h.SingleKey, Reason: h.Reason.String()})
	}
	return c, true
}

// partitions returns ci's partitions as partitionStats reports them: range statistics,
// meters, budgets and throttled requests.
func (s consoleSource) partitions(ci *catalog.Coll, st *store.CatalogState) []console.Partition {
	n := ci.Map.Len()
	loads := s.e.Shards.PartitionLoads(ci) // every node's partitions in a cluster
	budgets := s.e.Shards.ReadBudgets(ci)
	even := sharding.Throughput(st, ci.Meta).RU / float64(n)
	shards := s.e.Cat.Shards()
	out := make([]console.Partition, n)
	for i := range n {
		p := ci.Map.Partition(i)
		lo, hi := ci.Map.Range(i)
		cp := console.Partition{ID: p.ID, Min: hashBound(lo, i == 0, "MinKey"), Max: hashBound(hi, i == n-1, "MaxKey"),
			Shard: catalog.ShardName(p.Shard), ShardIndex: p.Shard, BudgetRU: even}
		if c := s.e.Storage.Cluster; c != nil {
			cp.Node, _ = c.ShardHost(p.Shard)
		}
		if p.Shard >= 0 && p.Shard < len(shards) {
			cp.Documents, cp.Bytes, _ = shards[p.Shard].Stats(ci.Meta.ID, lo, hi)
		}
		cp.RUPerSec, cp.Throttled = loads.Snaps[i].RUPerSec, loads.Throttled[i]
		if budgets != nil {
			cp.BudgetRU = budgets.PerPartition(i)
		}
		out[i] = cp
	}
	return out
}

// hashBound prints a partition bound as config.chunks shows it: the hash as a signed
// NumberLong, end at the ends of the space.
func hashBound(h uint64, atEnd bool, end string) string {
	if atEnd {
		return end
	}
	return strconv.FormatInt(shard.HashToInt64(h), 10)
}

// shardKey prints ci's shard key pattern, "" when it is not sharded.
func shardKey(ci *catalog.Coll) string {
	if ci.Meta.ShardKey == nil {
		return ""
	}
	return ci.Meta.ShardKey.String()
}

// Manager implements console.Source.
func (s consoleSource) Manager() console.Manager {
	m := s.e.Shards
	if m == nil {
		return console.Manager{}
	}
	return console.Manager{Shards: len(s.e.Cat.Shards()), Splits: m.Splits(), Merges: m.Merges(), Moves: m.Moves(),
		HotKeyReports: m.HotKeyReports(), Rounds: m.Rounds(), Conversions: m.Conversions(), Redistributions: m.Redistributions()}
}

// Events implements console.Source.
func (s consoleSource) Events() []console.Event {
	if s.e.Shards == nil {
		return nil
	}
	var out []console.Event
	for _, ev := range s.e.Shards.Events() {
		ce := console.Event{Time: ev.Time, Kind: ev.Kind, NS: ev.NS}
		switch ev.Kind {
		case "move":
			ce.From, ce.To = catalog.ShardName(ev.From), catalog.ShardName(ev.To)
			ce.Detail = fmt.Sprintf("partition %s (%s)", ids(ev.Partitions), ev.Reason)
		default:
			ce.Detail = fmt.Sprintf("%s into %s (%s)", ids(ev.Partitions), ids(ev.Into), ev.Reason)
		}
		out = append(out, ce)
	}
	return out
}

// ids prints partition ids as a list: "3, 4".
func ids(v []uint64) string {
	parts := make([]string, len(v))
	for i, id := range v {
		parts[i] = strconv.FormatUint(id, 10)
	}
	return strings.Join(parts, ", ")
}

// SlowOps implements console.Source.
func (s consoleSource) SlowOps() []console.SlowOp {
	recent := s.e.SlowOps.Recent()
	out := make([]console.SlowOp, len(recent))
	for i, op := range recent {
		out[i] = console.SlowOp{Time: op.Time, Command: op.Command, NS: op.NS, Duration: op.Duration, RU: op.RU,
			Error: op.Error, PlanSummary: op.PlanSummary}
	}
	return out
}

// AuthEnabled implements console.Source.
func (s consoleSource) AuthEnabled() bool { return s.e.Access.Enabled() }

// Authorize implements console.Source: user is "name" (of admin) or "name@db"; the console
// needs the cluster action class that clusterAdmin and root grant (MongoDB's clusterMonitor
// privileges are within it).
func (s consoleSource) Authorize(user, password string) (known, allowed bool) {
	name := auth.UserName{User: user, DB: "admin"}
	if u, db, ok := strings.Cut(user, "@"); ok {
		name = auth.UserName{User: u, DB: db}
	}
	reg := s.e.Access.Registry()
	u := reg.User(name)
	if u == nil || !auth.CheckPassword(u, password) {
		return false, false
	}
	return true, reg.Allowed([]auth.UserName{name}, auth.Need{Action: auth.ActionClusterAdmin})
}
