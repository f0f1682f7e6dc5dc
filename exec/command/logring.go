package command

import (
	"sync"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// LogRing keeps the most recent log lines, encoded as JSON, for getLog: "global". It is a
// zapcore.Core to tee the server's logger into. It also holds the process logger's level,
// which setParameter's logLevel changes at runtime (Verbosity).
type LogRing struct {
	enc   zapcore.Encoder
	level zap.AtomicLevel
	mu    *ringState
}

// ringState is the shared, mutex-guarded ring of a LogRing and the cores derived from it.
type ringState struct {
	sync.Mutex
	lines []string
	next  int
	total int64
	// base is the level the server started with; verbosity is MongoDB's logLevel (0: base,
	// 1 to 5: debug).
	base      zapcore.Level
	verbosity atomic.Int32
}

// NewLogRing returns a LogRing holding up to size lines at or above level, which the
// server's other log cores share so that SetVerbosity changes them all.
func NewLogRing(size int, level zap.AtomicLevel) *LogRing {
	cfg := zapcore.EncoderConfig{
		TimeKey: "t", LevelKey: "s", NameKey: "c", MessageKey: "msg",
		EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.CapitalLevelEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
	}
	return &LogRing{
		enc:   zapcore.NewJSONEncoder(cfg),
		level: level,
		mu:    &ringState{lines: make([]string, 0, size), base: level.Level()},
	}
}

// Verbosity returns MongoDB's logLevel: 0 while the server logs at its configured level,
// 1 to 5 once setParameter raised it to debug.
func (l *LogRing) Verbosity() int32 { return l.mu.verbosity.Load() }

// SetVerbosity sets MongoDB's logLevel: 0 returns to the level the server started with, 1 to 5
// log at debug (zap has one debug level, MongoDB's D1 to D5 all map to it).
func (l *LogRing) SetVerbosity(v int32) {
	l.mu.verbosity.Store(v)
	if v == 0 {
		l.level.SetLevel(l.mu.base)
		return
	}
	l.level.SetLevel(zapcore.DebugLevel)
}

// Enabled implements zapcore.Core.
func (l *LogRing) Enabled(lvl zapcore.Level) bool { return l.level.Enabled(lvl) }

// With implements zapcore.Core.
func (l *LogRing) With(fields []zapcore.Field) zapcore.Core {
	enc := l.enc.Clone()
	for _, f := range fields {
		f.AddTo(enc)
	}
	return &LogRing{enc: enc, level: l.level, mu: l.mu}
}

// Check implements zapcore.Core.
func (l *LogRing) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if l.Enabled(e.Level) {
		return ce.AddCore(e, l)
	}
	return ce
}

// Write implements zapcore.Core.
func (l *LogRing) Write(e zapcore.Entry, fields []zapcore.Field) error {
	buf, err := l.enc.EncodeEntry(e, fields)
	if err != nil {
		return err
	}
	line := buf.String()
	buf.Free()
	if n := len(line); n > 0 && line[n-1] == '\n' {
		line = line[:n-1]
	}
	s := l.mu
	s.Lock()
	if len(s.lines) < cap(s.lines) {
		s.lines = append(s.lines, line)
	} else if cap(s.lines) > 0 {
		s.lines[s.next] = line
		s.next = (s.next + 1) % cap(s.lines)
	}
	s.total++
	s.Unlock()
	return nil
}

// Sync implements zapcore.Core.
func (l *LogRing) Sync() error { return nil }

// Lines returns the kept lines, oldest first, and how many lines were written in all.
func (l *LogRing) Lines() ([]string, int64) {
	s := l.mu
	s.Lock()
	defer s.Unlock()
	out := make([]string, 0, len(s.lines))
	out = append(out, s.lines[s.next:]...)
	out = append(out, s.lines[:s.next]...)
	return out, s.total
}
