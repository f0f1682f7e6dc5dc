package main

import (
	"fmt"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/cleavedb/cleave/exec"
)

// newLogger builds the process logger: console or JSON lines on stderr at the configured
// level, teed into a ring of the last 1,024 lines for getLog. Errors carry no stack traces: a log line
// is one line.
func newLogger(c *Config) (*zap.Logger, *exec.LogRing, error) {
	level, err := zapcore.ParseLevel(c.LogLevel)
	if err != nil {
		return nil, nil, fmt.Errorf("--log-level %q: %w", c.LogLevel, err)
	}
	encCfg := zap.NewProductionEncoderConfig()
	encCfg.EncodeTime = zapcore.ISO8601TimeEncoder
	var enc zapcore.Encoder
	if c.LogFormat == "json" {
		enc = zapcore.NewJSONEncoder(encCfg)
	} else {
		encCfg.EncodeLevel = zapcore.CapitalLevelEncoder
		enc = zapcore.NewConsoleEncoder(encCfg)
	}
	atomic := zap.NewAtomicLevelAt(level) // setParameter's logLevel changes it at runtime
	r := exec.NewLogRing(1024, atomic)
	core := zapcore.NewTee(zapcore.NewCore(enc, zapcore.Lock(os.Stderr), atomic), r)
	return zap.New(core), r, nil
}
