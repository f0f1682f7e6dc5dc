package query

import (
	"github.com/cleavedb/cleave/shard"
)

// meterScan charges a finished scan (or index scan) to the partitions it read, evenly:
// a scan's load spans its partitions, so no split point divides it (Meter.RecordScan).
func (ss *ShardStream) meterScan() {
	if ss.meters == nil || ss.p.Kind == PlanIDs || len(ss.Ranges) == 0 {
		return
	}
	c := shard.Cost{DocsExamined: ss.Stats.DocsExamined, KeysExamined: ss.Stats.KeysExamined,
		BytesReturned: ss.Stats.BytesRead}
	ru := c.RU() / float64(len(ss.Ranges))
	m := ss.meters.Map()
	for _, r := range ss.Ranges {
		ss.meters.Meter(m.Locate(r[0])).RecordScan(ru)
	}
}
