// Package etcdtest starts real etcd clusters inside a test process (go.etcd.io/etcd/server's
// embed package, the server etcd itself runs) on loopback ports, for the tests of package
// cluster and the integration tests. Nothing here is a stand-in: the members elect a raft
// leader, replicate and serve the v3 API over gRPC like any etcd deployment.
//
//	c := etcdtest.Start(t, 3)          // three members, stopped by t.Cleanup
//	opts.Endpoints = c.Endpoints()
//	c.Stop(c.Leader())                 // kill the leader: the other two elect another
//	c.Restart(1)                       // a stopped member starts again on its data
package etcdtest

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// Cluster is a running etcd cluster of embedded members.
type Cluster struct {
	t       testing.TB
	members []*embed.Etcd
	cfgs    []*embed.Config
	clients []string
}

// Start starts an n-member cluster with its data under t.TempDir() and returns once every
// member is ready (a leader is elected). The members are stopped when the test ends. Ports
// are picked free, then bound by etcd: another process may take one in between, so a start
// that finds an address in use is made again on other ports (at most three times).
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	for attempt := 1; ; attempt++ {
		c, err := tryStart(t, n)
		if err == nil {
			return c
		}
		if attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			t.Fatalf("etcdtest: %v", err)
		}
		t.Logf("etcdtest: %v; starting again on other ports", err)
	}
}

// tryStart starts an n-member cluster on ports free right now; on failure it stops the
// members it started.
func tryStart(t testing.TB, n int) (*Cluster, error) {
	peers, clients := freeURLs(t, n), freeURLs(t, n)
	var initial []string
	for i := range n {
		initial = append(initial, fmt.Sprintf("m%d=%s", i, peers[i].String()))
	}
	dir := t.TempDir()
	c := &Cluster{t: t, members: make([]*embed.Etcd, n), cfgs: make([]*embed.Config, n)}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("m%d", i)
		cfg.Dir = filepath.Join(dir, cfg.Name)
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peers[i]}, []url.URL{peers[i]}
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clients[i]}, []url.URL{clients[i]}
		cfg.InitialCluster = strings.Join(initial, ",")
		cfg.InitialClusterToken = "cleave-test"
		cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
		// Short ticks: the 2-core test machine should elect in well under a second, and a
		// test that kills a member sees the survivors agree quickly.
		cfg.TickMs, cfg.ElectionMs = 50, 500
		cfg.UnsafeNoFsync = true // test data: losing it on a power cut is fine
		c.clients = append(c.clients, clients[i].Host)
		c.cfgs[i] = cfg
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.start(i)
		}()
	}
	wg.Wait()
	// A member that could not bind fails at once while the others wait for it in vain:
	// report the bind error, which Start retries.
	slices.SortStableFunc(errs, func(a, b error) int {
		return boolRank(a == nil || !strings.Contains(a.Error(), "address already in use")) -
			boolRank(b == nil || !strings.Contains(b.Error(), "address already in use"))
	})
	for _, err := range errs {
		if err != nil {
			c.StopAll()
			return nil, err
		}
	}
	t.Cleanup(c.StopAll)
	return c, nil
}

// boolRank is 1 for true, 0 for false.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// start starts member i and waits until it is ready.
func (c *Cluster) start(i int) error {
	e, err := embed.StartEtcd(c.cfgs[i])
	if err != nil {
		return err
	}
	c.members[i] = e
	select {
	case <-e.Server.ReadyNotify():
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("etcd member %s not ready after 30s", c.cfgs[i].Name)
	}
}

// Restart starts stopped member i again on its data: it rejoins the cluster and catches up.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.members[i] != nil {
		return
	}
	if err := c.start(i); err != nil {
		c.t.Fatalf("etcdtest: restarting member %d: %v", i, err)
	}
}

// Leader returns the index of the member that is the raft leader now, as a running member
// sees it (-1 when none knows of one).
func (c *Cluster) Leader() int {
	for _, e := range c.members {
		if e == nil {
			continue
		}
		lead := e.Server.Leader()
		for i, m := range c.members {
			if m != nil && m.Server.MemberID() == lead {
				return i
			}
		}
	}
	return -1
}

// Endpoints returns the members' client addresses (host:port), the form --etcd takes.
func (c *Cluster) Endpoints() []string { return append([]string(nil), c.clients...) }

// Stop stops member i, as a crash would for its clients (its data stays).
func (c *Cluster) Stop(i int) {
	if e := c.members[i]; e != nil {
		e.Close()
		c.members[i] = nil
	}
}

// StopAll stops every member still running.
func (c *Cluster) StopAll() {
	for i := range c.members {
		c.Stop(i)
	}
}

// freeURLs returns n loopback URLs on ports free right now, below the ephemeral range when it
// can (FreeAddr): Restart binds a member's ports again after other tests had time to take them.
func freeURLs(t testing.TB, n int) []url.URL {
	t.Helper()
	out := make([]url.URL, n)
	for i := range out {
		out[i] = url.URL{Scheme: "http", Host: FreeAddr(t)}
	}
	return out
}
