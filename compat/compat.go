package compat

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// Options configures RunSuites.
type Options struct {
	ModuleDir string        // the compat module (see Dirs)
	RepoDir   string        // the repository cleave builds from; unused with URI
	URI       string        // an existing server; "" starts cleave, a fresh one per suite
	CleaveBin string        // the cleave binary to start; "" builds it from RepoDir
	OneHost   bool          // name a started cleave once in the URI instead of twice (see Server.URI)
	Suites    []Suite       //
	Timeout   time.Duration // go test -timeout for one suite
	Log       io.Writer     // if not nil, receives the runners' raw output
	Progress  io.Writer     // if not nil, receives a line per suite
}

// RunSuites runs the suites one after the other and returns their results and the driver
// version. When it starts cleave itself, each suite gets a fresh server and data directory, so
// that a crash or leftover state of one suite does not leak into the next.
func RunSuites(ctx context.Context, o Options) ([]SuiteResult, string, error) {
	r := &Runner{ModuleDir: o.ModuleDir, URI: o.URI, Timeout: o.Timeout, Log: o.Log}
	driverDir, version, err := r.DriverDir(ctx)
	if err != nil {
		return nil, "", err
	}
	var bin, tmp string
	if o.URI == "" {
		tmp, err = os.MkdirTemp("", "cleave-compat-")
		if err != nil {
			return nil, "", err
		}
		defer func() { _ = os.RemoveAll(tmp) }()
		bin = o.CleaveBin
		if bin == "" {
			bin = filepath.Join(tmp, "cleave")
			if err := BuildCleave(ctx, o.RepoDir, bin); err != nil {
				return nil, "", err
			}
		}
	}
	var results []SuiteResult
	for i, s := range o.Suites {
		var srv *Server
		if o.URI == "" {
			work := filepath.Join(tmp, fmt.Sprintf("%02d-%s", i, s.Name))
			if err := os.Mkdir(work, 0o755); err != nil {
				return nil, "", err
			}
			if srv, err = StartCleave(ctx, bin, work); err != nil {
				return nil, "", err
			}
			r.URI = srv.URI(!o.OneHost)
		}
		res, err := r.Run(ctx, driverDir, s)
		if srv != nil {
			if srv.Exited() && res.Err == "" {
				res.Err = "cleave exited during the suite: " + clip(srv.LogTail(1))
			}
			srv.Stop()
		}
		if err != nil {
			return nil, "", fmt.Errorf("suite %s: %w", s.Name, err)
		}
		if o.Progress != nil {
			c := res.Counts()
			_, _ = fmt.Fprintf(o.Progress, "%-24s %4d tests %4d passed %4d failed %4d not run %4d skipped  %s  %.0fs\n",
				s.Name, c.Tests, c.Passed, c.Failed, c.NotRun, c.Skipped, formatRate(c), res.Elapsed.Seconds())
		}
		results = append(results, res)
	}
	return results, version, nil
}
