package command

import (
	"sync"

	"go.uber.org/zap/zapcore"
)

// LogRing keeps the most recent log lines, encoded as JSON, for getLog: "global". It is a
// zapcore.Core to tee the server's logger into.
type LogRing struct {
	enc   zapcore.Encoder
	level zapcore.LevelEnabler
	mu    *ringState
}

// ringState is the shared, mutex-guarded ring of a LogRing and the cores derived from it.
type ringState struct {
	sync.Mutex
	lines []string
	next  int
	total int64
}

// NewLogRing returns a LogRing holding up to size lines at or above level.
func NewLogRing(size int, level zapcore.LevelEnabler) *LogRing {
	cfg := zapcore.EncoderConfig{
		TimeKey: "t", LevelKey: "s", NameKey: "c", MessageKey: "msg",
		EncodeTime: zapcore.ISO8601TimeEncoder, EncodeLevel: zapcore.CapitalLevelEncoder,
		EncodeDuration: zapcore.StringDurationEncoder,
	}
	return &LogRing{
		enc:   zapcore.NewJSONEncoder(cfg),
		level: level,
		mu:    &ringState{lines: make([]string, 0, size)},
	}
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
