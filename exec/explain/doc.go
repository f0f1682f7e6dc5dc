// Package explain renders query and pipeline plans in mongos' explain shape: the winning plan
// (SINGLE_SHARD, SHARD_MERGE or SHARD_MERGE_SORT over each shard's stage tree, with the
// partitions each reads), the split of a pipeline between the shards and the merger, and
// the statistics of a run (documents and keys examined, request units, per shard and per
// partition). It renders plan values and runs nothing: the commands that explain plan and
// run, and hand it what they got.
package explain
