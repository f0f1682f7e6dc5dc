package query

import (
	"context"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/shard"
)

// A stream's request units: before its first read it takes shard.MinRU from the budget of each
// partition it reads (admit), which refuses the read with 16500 when a partition has spent
// its share of the provisioned throughput; when it closes (settle) it charges what the reads
// really cost, from its ScanStats, to the partitions' budgets and load meters. Reads of keys
// (point reads, scans of the hashes a shard-key equality fixes) are charged to those keys,
// so that their load shows in the key sample, splits the partition at a load-weighted point
// and reports a single hot key; a scan of whole partitions is load no split point divides.

// admit takes the stream's admission from its partitions' budgets, at the priority of the
// request ctx belongs to and within its deadline (catalog.Admission).
func (ss *ShardStream) admit(ctx context.Context) error {
	if ss.budgets == nil || ss.budgets.Map() != ss.ci.Map {
		return nil
	}
	adm := catalog.Admission(ctx)
	last := -1
	for _, i := range ss.parts {
		if i == last {
			continue
		}
		last = i
		if err := ss.budgets.WaitFor(i, shard.MinRU, adm); err != nil {
			if ss.meters != nil && ss.meters.Map() == ss.ci.Map {
				ss.meters.Meter(i).NoteThrottledPriority(shard.MinRU, adm.Priority)
			}
			ss.refused = true
			return catalog.Throttled(ss.ci, err)
		}
		ss.admitted += shard.MinRU
		if ss.meters != nil && ss.meters.Map() == ss.ci.Map {
			ss.meters.Meter(i).NoteRequest()
		}
	}
	return nil
}

// settle charges the stream's reads to its partitions: the budgets get the difference between
// the charge and the admission, the meters the load (point reads were recorded as they were
// made).
func (ss *ShardStream) settle() {
	if !ss.started || ss.refused || len(ss.parts) == 0 {
		return
	}
	ru := ss.Stats.Charge()
	share := ru / float64(len(ss.parts))
	if b := ss.budgets; b != nil && b.Map() == ss.ci.Map {
		extra := (ru - ss.admitted) / float64(len(ss.parts))
		for _, i := range ss.parts {
			b.Charge(i, extra)
		}
	}
	m := ss.meters
	if m == nil || ss.p.Kind == PlanIDs || m.Map() != ss.ci.Map {
		return
	}
	for j, i := range ss.parts {
		if ss.p.hashes == nil {
			m.Meter(i).RecordScan(share)
			continue
		}
		h := ss.Ranges[j][0]
		m.Record(i, h, ss.labelOf(h), share)
	}
}

// labelOf returns the label of hash h among the plan's fixed shard-key hashes.
func (ss *ShardStream) labelOf(h uint64) []byte {
	for _, t := range ss.p.hashes {
		if t.hash == h {
			return t.label
		}
	}
	return nil
}

// countDistinct counts the distinct values of a sorted slice.
func countDistinct(s []int) int {
	n := 0
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			n++
		}
	}
	return n
}

// PartitionCharge is the request units one partition was charged for a stream's reads.
type PartitionCharge struct {
	ID uint64 // the partition's id
	RU float64
}

// PartitionCharges splits the stream's charge over the partitions it read (explain), as
// settle charges them: evenly over the ranges read.
func (ss *ShardStream) PartitionCharges() []PartitionCharge {
	if len(ss.parts) == 0 {
		return nil
	}
	share := ss.Stats.Charge() / float64(len(ss.parts))
	var out []PartitionCharge
	for j, i := range ss.parts {
		if j > 0 && i == ss.parts[j-1] {
			out[len(out)-1].RU += share
			continue
		}
		out = append(out, PartitionCharge{ID: ss.ci.Map.Partition(i).ID, RU: share})
	}
	return out
}

// PartitionRead is one partition a stream reads: its id and hash range, and the hashes it
// reads within it when the query fixes the shard key (nil: the whole range), or the hash
// ranges it reads when the query fixes a hierarchical key's prefix.
type PartitionRead struct {
	ID     uint64
	Lo, Hi uint64
	Hashes []uint64
	Spans  [][2]uint64
}

// PartitionsRead returns the partitions the stream reads, in hash order (explain).
func (ss *ShardStream) PartitionsRead() []PartitionRead {
	var out []PartitionRead
	for j, i := range ss.parts {
		if j == 0 || i != ss.parts[j-1] {
			lo, hi := ss.ci.Map.Range(i)
			out = append(out, PartitionRead{ID: ss.ci.Map.Partition(i).ID, Lo: lo, Hi: hi})
		}
		if ss.p.spans != nil {
			out[len(out)-1].Spans = append(out[len(out)-1].Spans, ss.Ranges[j])
		}
		if ss.p.hashes != nil {
			out[len(out)-1].Hashes = append(out[len(out)-1].Hashes, ss.Ranges[j][0])
		}
	}
	return out
}
