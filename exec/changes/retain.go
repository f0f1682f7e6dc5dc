package changes

import (
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/store"
)

// Retention bounds each shard's change log, as the oplog window bounds MongoDB's: records
// older than Age, and the oldest records past Bytes of log on disk, are trimmed; a stream
// resuming before what is left fails with ChangeStreamHistoryLost. Zero fields bound nothing.
type Retention struct {
	Age   time.Duration
	Bytes int64
}

// Trim applies r to db's change log once, now.
func (r Retention) Trim(db *store.DB, now time.Time) error {
	var before uint64
	if r.Age > 0 {
		before = uint64(now.Add(-r.Age).Unix()) << 32
	}
	if r.Bytes > 0 {
		used, err := db.ChangesDiskUsage(0)
		if err != nil {
			return err
		}
		if excess := int64(used) - r.Bytes; excess > 0 {
			cut, err := cutoff(db, excess)
			if err != nil {
				return err
			}
			before = max(before, cut)
		}
	}
	if before == 0 {
		return nil
	}
	if oldest, ok, err := db.OldestChange(); err != nil || !ok || oldest.TS >= before {
		return err
	}
	return db.TrimChanges(before)
}

// cutoff returns the time before which the oldest records hold about excess bytes.
func cutoff(db *store.DB, excess int64) (uint64, error) {
	var n int64
	var ts uint64
	err := db.ReadChanges(store.ChangePos{}, ^uint64(0), func(p store.ChangePos, rec, _ []byte) bool {
		n += int64(len(rec)) + 16
		ts = p.TS + 1
		return n < excess
	})
	return ts, err
}

// RunRetention trims the logs of dbs every interval until stop is closed.
func RunRetention(r Retention, dbs func() []*store.DB, interval time.Duration, log *zap.Logger, stop <-chan struct{}) {
	if r.Age <= 0 && r.Bytes <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			for _, db := range dbs() {
				if err := r.Trim(db, now); err != nil {
					log.Warn("trimming the change log failed", zap.String("dir", db.Dir()), zap.Error(err))
				}
			}
		}
	}
}
