//go:build ignore

// Command benchetcd runs a one-member etcd (go.etcd.io/etcd/server/v3/embed, the server etcd
// itself runs) for the multi-process benchmark scripts (scripts/bench-replicas.sh), so that
// they need no etcd binary: the module already depends on the embed package (cluster/etcdtest).
// It is built by name and ignored by ./... (the build tag): it is no package of the module.
//
//	go build -o /tmp/benchetcd scripts/benchetcd/main.go
//	/tmp/benchetcd -dir /tmp/etcd -listen 127.0.0.1:2379 -peer 127.0.0.1:2380
//
// It prints nothing until ready, then "ready", and runs until SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	dir := flag.String("dir", "benchetcd-data", "data directory")
	listen := flag.String("listen", "127.0.0.1:2379", "client address (host:port)")
	peer := flag.String("peer", "127.0.0.1:2380", "peer address (host:port)")
	noFsync := flag.Bool("no-fsync", false, "skip etcd's fsyncs (the catalog's writes are off the measured paths)")
	flag.Parse()
	cu := url.URL{Scheme: "http", Host: *listen}
	pu := url.URL{Scheme: "http", Host: *peer}
	cfg := embed.NewConfig()
	cfg.Name = "bench"
	cfg.Dir = *dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = *noFsync
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		log.Fatal(err)
	}
	select {
	case <-e.Server.ReadyNotify():
		fmt.Println("ready")
	case <-time.After(60 * time.Second):
		log.Fatal("etcd not ready after 60s")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case <-sig:
	case err := <-e.Err():
		log.Fatal(err)
	}
	e.Close()
}
