package etcdtest

import (
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// handedOut holds the addresses FreeAddr has returned in this process: a node killed and not
// yet restarted leaves its port free, and another test must not be given it meanwhile.
var handedOut sync.Map

// FreeAddr returns a loopback address whose port was free a moment ago, below the kernel's
// ephemeral range when it can. A server stopped and started again on it (an etcd member, a
// killed node) must find it free again, and a port of the ephemeral range may meanwhile be
// taken by any outgoing connection or port-0 listener of the tests running in parallel or of
// other processes; ports below that range are only ever taken by an explicit bind.
func FreeAddr(t testing.TB) string {
	t.Helper()
	if low := ephemeralLow(); low > 11000 {
		for range 100 {
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(10000+rand.IntN(low-10000)))
			if _, taken := handedOut.Load(addr); taken {
				continue
			}
			if ln, err := net.Listen("tcp", addr); err == nil {
				_ = ln.Close()
				handedOut.Store(addr, struct{}{})
				return addr
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("etcdtest: %v", err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// ephemeralLow returns the first port of the kernel's ephemeral range (Linux's
// ip_local_port_range), 0 when unknown.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[0])
	return n
}
