package store

import (
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"go.uber.org/zap"
)

// eventCounters counts the Pebble events that Metrics reports and Pebble does not count.
type eventCounters struct {
	writeStalls atomic.Int64
	diskSlow    atomic.Int64
}

// newEventListener returns Pebble's event listener for one DB: routine background work
// (flushes, empty ones included, and compactions) at Debug, their failures and write stalls
// at Warn, data corruption and background errors at Error. The logger is already named for
// the DB.
func newEventListener(l *zap.Logger, c *eventCounters) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			l.Error("pebble background error", zap.Error(err))
		},
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			// NB: called synchronously on read paths; logging is all we may do here.
			l.Error("pebble data corruption", zap.String("info", info.String()))
		},
		FlushEnd: func(info pebble.FlushInfo) { logFlushEnd(l, info) },
		CompactionEnd: func(info pebble.CompactionInfo) {
			if info.Err != nil {
				l.Warn("pebble compaction failed", zap.Int("job", info.JobID), zap.Error(info.Err))
				return
			}
			if ce := l.Check(zap.DebugLevel, "pebble compaction"); ce != nil {
				ce.Write(zap.Int("job", info.JobID), zap.String("info", info.String()))
			}
		},
		WriteStallBegin: func(info pebble.WriteStallBeginInfo) {
			c.writeStalls.Add(1)
			l.Warn("pebble write stall", zap.String("reason", info.Reason))
		},
		WriteStallEnd: func() {
			l.Info("pebble write stall ended")
		},
		DiskSlow: func(info pebble.DiskSlowInfo) {
			// NB: must not block or do I/O (Pebble's contract); zap's core may buffer, which is fine.
			c.diskSlow.Add(1)
			l.Warn("disk slow", zap.String("path", info.Path), zap.String("op", info.OpType.String()),
				zap.Int("write_size", info.WriteSize), zap.Duration("duration", info.Duration))
		},
	}
}

// emptyFlush is the message of the error Pebble reports in FlushInfo.Err when a flush wrote
// no table (an empty memtable flushed, by DB.Flush or before an ingestion): the flush did its
// job. NB: Pebble does not export the error (compaction.go's errEmptyTable), so its message
// is matched, as Pebble's own metamorphic test does.
const emptyFlush = "pebble: empty table"

// logFlushEnd logs the end of a flush: at Debug when it wrote tables or had nothing to write,
// at Warn when it failed.
func logFlushEnd(l *zap.Logger, info pebble.FlushInfo) {
	if info.Err != nil && info.Err.Error() != emptyFlush {
		l.Warn("pebble flush failed", zap.Int("job", info.JobID), zap.Error(info.Err))
		return
	}
	msg := "pebble flush"
	if info.Err != nil {
		msg = "pebble flush empty"
	}
	if ce := l.Check(zap.DebugLevel, msg); ce != nil {
		ce.Write(zap.Int("job", info.JobID), zap.String("reason", info.Reason),
			zap.Uint64("input_bytes", info.InputBytes), zap.Duration("duration", info.TotalDuration))
	}
}
