package exec

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/cleavedb/cleave/exec/cmd"
)

// Options configures an Executor.
type Options = cmd.Options

// Storage is what the executor reads and writes.
type Storage = cmd.Storage

// AuthOptions configures access control.
type AuthOptions = cmd.AuthOptions

// LogRing keeps the most recent log lines for getLog.
type LogRing = cmd.LogRing

// Executor answers MongoDB commands; it implements wire.Handler.
type Executor = cmd.Server

// New returns an Executor.
func New(opts Options, logger *zap.Logger) *Executor { return cmd.New(opts, logger) }

// NewLogRing returns a ring of the size most recent log lines at level or above.
func NewLogRing(size int, level zapcore.LevelEnabler) *LogRing { return cmd.NewLogRing(size, level) }
