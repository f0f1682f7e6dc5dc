// Package stream holds document streams: the pull-based iterators every read is built of.
//
// A Stream yields documents one at a time until (nil, nil) and is closed exactly once by
// its owner; a stage that wraps an input owns it and closes it. The pieces here know nothing
// of collections or shards:
//
//   - Slice and Empty: documents held in memory;
//   - Concat: inputs one after the other (per-shard results with no order to keep);
//   - Merge: a k-way merge of inputs each sorted by the same spec (mongos' SHARD_MERGE_SORT);
//   - Skip, Limit and Project: find's skip, limit and projection;
//   - Sort: a blocking sort, top-k under a limit, spilling to a Temp past its memory bound
//     when allowDiskUse is set;
//   - Budget and Reservation: the server's one account of the memory queries hold (sort
//     buffers, $group tables, reply batches), from which a blocking stage reserves through
//     its Temp and past which it spills;
//   - Checker: the context check of a loop that reads a whole input (a sort, a $group),
//     every CheckEvery documents, since the input may never check.
//
// Invariant: the order of sorted output is the byte order of SortKey, which is MongoDB's
// order of the sort fields, stable for equal keys.
//
//	s := &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec, Limit: 10}
//	defer s.Close()
//	for d, err := s.Next(ctx); d != nil && err == nil; d, err = s.Next(ctx) { ... }
package stream
