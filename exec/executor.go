package exec

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/cleavedb/cleave/exec/cmd"
	"github.com/cleavedb/cleave/exec/cmd/server"
	"github.com/cleavedb/cleave/exec/cmd/users"
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
func New(opts Options, logger *zap.Logger) *Executor { return cmd.New(opts, logger, families(opts)...) }

// families are the command families whose handlers live above exec/cmd; the server commands,
// sessions and transactions answer without storage, the others need it.
func families(opts Options) []cmd.Family {
	out := []cmd.Family{
		func(s *cmd.Server, add func(*cmd.Command)) { server.New(s).Add(add) },
	}
	if opts.Storage == nil {
		return out
	}
	return append(out,
		func(s *cmd.Server, add func(*cmd.Command)) { (&users.Handlers{Server: s}).Add(add) },
	)
}

// NewLogRing returns a ring of the size most recent log lines at level or above.
func NewLogRing(size int, level zapcore.LevelEnabler) *LogRing { return cmd.NewLogRing(size, level) }
