package store

import (
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestLogFlushEnd checks the level and message of each outcome of a flush: a flush that
// found nothing to write (Pebble's "empty table") is routine, not a failure.
func TestLogFlushEnd(t *testing.T) {
	cases := []struct {
		name  string
		info  pebble.FlushInfo
		level zapcore.Level
		msg   string
	}{
		{"Wrote", pebble.FlushInfo{JobID: 1, Done: true, Output: []pebble.TableInfo{{}}}, zapcore.DebugLevel, "pebble flush"},
		{"Empty", pebble.FlushInfo{JobID: 2, Done: true, Err: errors.New("pebble: empty table")}, zapcore.DebugLevel, "pebble flush empty"},
		{"Failed", pebble.FlushInfo{JobID: 3, Done: true, Err: errors.New("disk on fire")}, zapcore.WarnLevel, "pebble flush failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			logFlushEnd(zap.New(core), tc.info)
			all := logs.All()
			if len(all) != 1 || all[0].Level != tc.level || all[0].Message != tc.msg {
				t.Fatalf("logged %v, want one %s %q", all, tc.level, tc.msg)
			}
		})
	}
}

// TestFlushEmptyNotWarned flushes a DB with nothing to flush, which Pebble reports as a
// flush that failed with "empty table": nothing is logged above Debug.
func TestFlushEmptyNotWarned(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	db, err := Open(Options{Dir: "db", FS: vfs.NewMem(), Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessage("pebble flush empty").Len(); n == 0 {
		t.Errorf("no empty flush logged; the logs: %v", logs.All())
	}
	if warned := logs.FilterLevelExact(zapcore.WarnLevel).All(); len(warned) > 0 {
		t.Errorf("warnings logged: %v", warned)
	}
}
