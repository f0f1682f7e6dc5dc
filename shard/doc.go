// Package shard owns the partition map of each collection and the decisions about it: routing
// a shard-key hash to its partition and shard, when partitions split and move (size, provisioned
// throughput, measured load, balance between shards), what an operation costs in request units,
// and each partition's share of the provisioned throughput. It sees hashes, sizes and costs —
// never commands, documents, Pebble or sockets. Executing a decision (committing the new map to
// the catalog, copying a partition's data) is the exec layer's job.
//
// The pieces:
//
//   - Map: an immutable, validated list of partitions. Partition i covers the hashes
//     [Lo_i, Lo_{i+1}), the last one up to 2^64; Partitions[0].Lo == 0, Lo strictly increases,
//     ids are unique and never reused. So every hash has exactly one partition (Locate), and a
//     split or move — Map.Split, Map.Move, or an Action's Apply — returns a new list from which
//     the caller builds the next Map. A partition id names one range forever: a split retires
//     its parent, and the children get new ids.
//   - Cost.RU: the request-unit model (a 1 KiB point read is 1 RU, a 1 KiB insert 5.5 RU).
//   - Meter / Meters: per-partition RU/s (exponentially decayed) and a weighted sample of the
//     keys served, recorded from the hot path with one atomic add (and, for sampled operations,
//     a TryLock that never waits).
//   - Policy.Decide: a pure function from a CollectionView (sizes, histograms, RU/s, samples)
//     to actions — SplitAction, MoveAction, HotKeyReport — deterministic for a given view.
//   - Budgets: per-partition token buckets of T/N RU/s (or of the shares Reshape is given);
//     Admit returns a *ThrottledError (errors.Is ErrThrottled) when a partition spent its
//     share. Lock-free. With burst capacity (burst.go) a partition banks what it leaves unused,
//     up to 300 s of its share, and spends it at up to 3,000 RU/s in all. By priority
//     (priority.go, AdmitPriority), low-priority requests leave a reserve of the bucket to
//     high-priority ones and keep a floor of the share; WaitFor bounds a wait by a deadline.
//   - Policy.CheckLogicalSize: the write path's guard on one shard-key value's size.
//   - Zones (zone.go): CollectionView.Zones pins the partitions of each zone range to its
//     zone's shards; Decide splits at the ranges' bounds and moves partitions into them first,
//     and no other rule moves a zoned partition out of its zone.
//
// Decisions are optimistic: Decide works on a snapshot, and the exec layer applies each action
// to the map current at commit time, under its catalog lock. An action whose partition was
// split or moved since fails with ErrStaleAction and is simply dropped; the next round decides
// again. Since ids are never reused, a partition id still present still has the range the
// decision saw.
//
// Usage, on the hot path and in the background loop:
//
//	m, err := shard.NewMap(parts)                       // from the catalog
//	meters := shard.NewMeters(m, nil, opts.MeterOptions())
//	budgets := shard.NewBudgets(m, throughput, opts.BudgetOptions())
//
//	i := m.Locate(hash)                                  // route
//	if err := budgets.Admit(i, estimate); err != nil {   // *ThrottledError: answer 16500
//		return err
//	}
//	cost := run(m.Partition(i).Shard)                    // exec/store do the work
//	budgets.Charge(i, cost.RU()-estimate)
//	meters.Record(i, hash, label, cost.RU())
//
//	v := shard.NewView(m, throughput, shardIDs, meters.Snapshots())
//	// … fill v.Partitions[i].Bytes, Docs, Histogram from the store …
//	for _, a := range policy.Decide(v, time.Now()) {
//		switch a := a.(type) {
//		case *shard.SplitAction:
//			parts, err := a.Apply(current, newIDs) // then commit, rebuild Map, Meters, Budgets
//		case *shard.MoveAction:
//			parts, err := a.Apply(current) // after copying the data to a.To
//		case *shard.HotKeyReport:
//			// log and count it
//		}
//	}
package shard
