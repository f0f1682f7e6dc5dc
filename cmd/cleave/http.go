package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/console"
	"github.com/cleavedb/cleave/exec"
)

// listenHTTP binds the HTTP listener at cfg.HTTPAddr; it returns nil when the address is
// empty (no listener).
func listenHTTP(cfg *Config) (net.Listener, error) {
	if cfg.HTTPAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on --http-addr %s: %w", cfg.HTTPAddr, unwrapNetErr(err))
	}
	return ln, nil
}

// httpMux returns the routes of the HTTP listener: /metrics, in Prometheus' text format,
// with the executor's collector and Go's runtime and process collectors; the web console's
// pages and /healthz, /readyz (package console); and with withPprof Go's profiles under
// /debug/pprof/.
func httpMux(ex *exec.Executor, logger *zap.Logger, withPprof bool) (*http.ServeMux, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		ex.Metrics(),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering metrics: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      zap.NewStdLog(logger),
		ErrorHandling: promhttp.ContinueOnError, // a partial scrape beats none
	}))
	console.New(ex.Console(), logger).Register(mux)
	if withPprof {
		// Registered on this mux, not http.DefaultServeMux (which net/http/pprof's init fills
		// but nothing here serves).
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return mux, nil
}

// serveHTTP serves the HTTP routes on ln until the server closes, writes the bound address
// to cfg.HTTPAddrFile, and sends an unexpected end of serving to s.done.
func (s *server) serveHTTP(cfg *Config, ln net.Listener, ex *exec.Executor, logger *zap.Logger) error {
	logger = logger.Named("http")
	mux, err := httpMux(ex, logger, cfg.Pprof)
	if err != nil {
		_ = ln.Close()
		return err
	}
	s.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          zap.NewStdLog(logger),
	}
	go func() {
		if err := s.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.done <- fmt.Errorf("http: %w", err)
		}
	}()
	addr := ln.Addr().String()
	if cfg.HTTPAddrFile != "" {
		if err := writeFileAtomic(cfg.HTTPAddrFile, []byte(addr)); err != nil {
			return fmt.Errorf("cannot write --http-addr-file: %w", err)
		}
	}
	logger.Info("http listening", zap.String("addr", addr))
	return nil
}
