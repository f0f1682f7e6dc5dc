// Command cleave runs the cleave server: a MongoDB-wire-protocol database that
// hash-partitions collections. `go run ./cmd/cleave` serves 127.0.0.1:27017 with its data in
// ./cleave-data; `cleave -h` lists the flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec"
	"github.com/cleavedb/cleave/shard"
	"github.com/cleavedb/cleave/wire"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

// run is main without os.Exit: it returns the process exit code.
func run(args []string) int {
	if code, ok := runTool(args, os.Stdout, os.Stderr); ok { // backup.go
		return code
	}
	cfg, err := parseConfig(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "cleave: %v\n", err)
		return 2
	}
	logger, ring, err := newLogger(&cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "cleave: %v\n", err)
		return 2
	}
	defer func() { _ = logger.Sync() }()
	cfg.memoryLimit = setMemoryLimit(&cfg, logger)
	setGCPercent(&cfg, logger)
	tuneMalloc(logger) // before Pebble allocates (malloc_linux.go)

	srv, err := start(&cfg, logger, ring, args)
	if err != nil {
		// One line a user can act on, not a stack trace.
		fmt.Fprintf(os.Stderr, "cleave: %v\n", err)
		return 1
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sig:
		logger.Info("shutting down", zap.String("signal", s.String()))
	case err := <-srv.done:
		if err != nil {
			logger.Error("server stopped", zap.Error(err))
			_ = srv.close(context.Background())
			return 1
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.close(context.Background()) }()
	select {
	case err := <-closed:
		if err != nil {
			logger.Error("shutdown", zap.Error(err))
			return 1
		}
	case <-time.After(shutdownTimeout):
		// Every wait of the shutdown is bounded, so this is a bug: the goroutines say where.
		logger.Error("shutdown did not finish in time; exiting without closing storage (its goroutines follow)",
			zap.Duration("timeout", shutdownTimeout))
		_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
		return 1
	}
	logger.Info("stopped")
	return 0
}

// Shutdown's bounds: after the listeners close, commands in flight get drainTimeout to
// finish; those still running are then interrupted (their contexts end, their connections
// close) and get interruptWait to return before storage closes under them. shutdownTimeout
// bounds the whole, whatever other nodes and etcd do (the process then exits 1).
const (
	drainTimeout    = 3 * time.Second
	interruptWait   = 2 * time.Second
	shutdownTimeout = 20 * time.Second
)

// server is a running cleave: the wire server and what it owns.
type server struct {
	wire *wire.Server
	http *http.Server // the HTTP listener (http.go); nil without --http-addr
	done chan error   // receives the wire server's Serve result, or the HTTP server's failure
	// closers release storage after the wire server has drained, last opened first.
	closers []func() error
	// quiesce tells the drivers' monitors that the router is going away (awaitable hellos
	// answer ShutdownInProgress) and stops moves in flight, before the wire server stops
	// accepting.
	quiesce func()
	log     *zap.Logger
}

// start opens storage, builds the executor and starts serving on cfg.Listen.
func start(cfg *Config, logger *zap.Logger, ring *exec.LogRing, argv []string) (*server, error) {
	s := &server{done: make(chan error, 2), log: logger}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	ln, err := listen(cfg, tc)
	if err != nil {
		return nil, err
	}
	hln, err := listenHTTP(cfg)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	st, view, local, closeStorage, err := openStorage(cfg, ln.Addr(), logger)
	if err != nil {
		_ = ln.Close()
		if hln != nil {
			_ = hln.Close()
		}
		return nil, err
	}
	s.closers = append(s.closers, closeStorage)
	var ws *wire.Server
	opts := execOptions(cfg, st, argv, func() wire.Stats { return ws.Stats() }, ring)
	opts.InternalTLS = internalTLSConfig(tc)
	ex := exec.New(opts, logger)
	s.closers = append(s.closers, func() error { ex.Close(); return nil })
	s.quiesce = ex.Quiesce
	if cfg.memoryLimit > 0 && ex.Vectors != nil {
		stop := make(chan struct{})
		go followLongLivedHeap(cfg.memoryLimit, ex.Vectors.HeapBytes, heapFollowInterval, stop, logger)
		s.closers = append(s.closers, func() error { close(stop); return nil })
	}
	if view != nil {
		stop := make(chan struct{})
		go view.followPlacement(ex, local, stop)
		s.closers = append(s.closers, func() error { close(stop); return nil })
	}
	if cfg.AuthUser != "" {
		if err := ex.EnsureRootUser(cfg.AuthUser, cfg.AuthPassword); err != nil {
			_ = ln.Close()
			_ = s.close(context.Background())
			return nil, fmt.Errorf("cannot create the root user: %w", err)
		}
	}
	ws = wire.NewServer(wire.ServerOptions{MaxConns: cfg.MaxConns}, ex, logger)
	s.wire = ws
	go func() { s.done <- ws.Serve(ln) }()
	if hln != nil {
		if err := s.serveHTTP(cfg, hln, ex, logger); err != nil {
			_ = s.close(context.Background())
			return nil, err
		}
	}
	addr := ln.Addr().String()
	if cfg.AddrFile != "" {
		if err := writeFileAtomic(cfg.AddrFile, []byte(addr)); err != nil {
			_ = s.close(context.Background())
			return nil, fmt.Errorf("cannot write --addr-file: %w", err)
		}
	}
	logger.Info("cleave is ready", zap.String("listen", addr), zap.String("dir", cfg.Dir),
		zap.Int("shards", cfg.Shards), zap.Bool("auth", cfg.Auth))
	return s, nil
}

// close stops accepting, lets in-flight requests finish (for drainTimeout), then closes
// storage.
func (s *server) close(ctx context.Context) error {
	var errs []error
	if s.http != nil {
		hctx, cancel := context.WithTimeout(ctx, drainTimeout)
		if s.http.Shutdown(hctx) != nil {
			errs = append(errs, s.http.Close()) // a scrape that outlasted the drain
		}
		cancel()
	}
	if s.quiesce != nil {
		s.quiesce()
	}
	if s.wire != nil {
		s.drain(ctx)
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}

// drain stops the wire server: commands in flight get drainTimeout to finish, then are
// interrupted, as mongod interrupts its operations at shutdown (InterruptedAtShutdown), and
// get interruptWait to return. A command that still runs (one that ignores its context) is
// left to fail on closed storage: it was never acknowledged.
func (s *server) drain(ctx context.Context) {
	dctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	if s.wire.Shutdown(dctx) == nil {
		return
	}
	s.log.Warn("interrupted the commands still running at shutdown", zap.Duration("after", drainTimeout))
	wctx, cancel := context.WithTimeout(ctx, interruptWait)
	defer cancel()
	if s.wire.Shutdown(wctx) != nil {
		s.log.Warn("commands still run after their interruption; closing storage under them",
			zap.Int64("active", s.wire.Stats().ConnectionsActive))
	}
}

// unwrapNetErr drops the "listen tcp 127.0.0.1:27017:" prefix that our own message repeats.
func unwrapNetErr(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

// writeFileAtomic writes data to path through a temporary file and a rename, so that a
// reader polling for the file never sees it half written.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// execOptions is the executor's part of cfg, over storage st.
func execOptions(cfg *Config, st *exec.Storage, argv []string, wireStats func() wire.Stats, ring *exec.LogRing) exec.Options {
	return exec.Options{
		Argv:               append([]string{"cleave"}, redactArgv(argv)...),
		Parsed:             cfg.parsed(),
		SlowOp:             cfg.SlowOp,
		TestCommands:       cfg.TestCommands,
		JavaScriptDisabled: !cfg.JavaScript,
		WireStats:          wireStats,
		MaxConns:           cfg.MaxConns,
		Log:                ring,
		Storage:            st,
		Partitioning: shard.Options{
			PartitionMaxBytes:        cfg.PartitionMaxBytes,
			PartitionMaxRU:           cfg.MaxPartitionRU,
			SplitLoadRU:              cfg.SplitLoadRU,
			SplitLoadWindow:          cfg.SplitLoadWindow,
			MergeAfter:               mergeAfter(cfg.MergeAfter),
			LogicalPartitionMaxBytes: cfg.LogicalPartitionMaxBytes,
			BalanceMinBytes:          balanceMinBytes(cfg.BalanceMinBytes),
			ThrottleWait:             time.Duration(cfg.ThrottleRetryMS) * time.Millisecond,
			Unmetered:                !cfg.RequestUnits,
			BurstCapacity:            cfg.BurstCapacity,
			Redistribute:             cfg.RedistributeThroughput,
			LowPriorityReserve:       cfg.LowPriorityReserve,
			LowPriorityFloor:         cfg.LowPriorityFloor,
		},
		AppPriorities:          cfg.appPriorities,
		MaxParallelism:         cfg.MaxParallelism,
		QueryMemory:            cfg.QueryMemory,
		PartitionCheckInterval: cfg.PartitionCheckInterval,
		Auth:                   exec.AuthOptions{Enabled: cfg.Auth, InternalKey: cfg.Cluster.key},
		SessionTimeout:         cfg.SessionTimeout,
		ChangeRetention:        cfg.ChangeRetention,
		ChangeRetentionBytes:   cfg.ChangeRetentionBytes,
		ChangeRetentionEvery:   cfg.ChangeRetentionInterval,
	}
}

// mergeAfter is shard.Options.MergeAfter for --merge-after d: 0 (off) becomes negative.
func mergeAfter(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
