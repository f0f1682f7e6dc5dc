package cluster

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Options configures a node's membership in a cluster.
type Options struct {
	// Endpoints are the etcd members' client addresses (host:port). Required.
	Endpoints []string
	// NodeName names the node, stable across restarts: its shards are found again by it.
	// Required; letters, digits, '.', '-' and '_'.
	NodeName string
	// Advertise is the host:port other nodes and clients reach this node's MongoDB wire
	// listener at. Required.
	Advertise string
	// LeaseTTL is how long the node stays registered after it stops renewing its lease (a
	// crash, a partition): the failure detection time. Default 10 s; at least 1 s.
	LeaseTTL time.Duration
	// Prefix is where the cluster's keys live in etcd, so that clusters can share an etcd.
	// Default "/cleave".
	Prefix string
	// DialTimeout bounds connecting to etcd, and RequestTimeout each request to it.
	// Defaults 5 s and 10 s.
	DialTimeout, RequestTimeout time.Duration
	// Replicated makes the node's new shards raft groups (--replicas above 1): each starts
	// with one replica, on this node, whose leader adds the others (replicas.go).
	Replicated bool
}

// EnsureDefaults fills in the zero fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 10 * time.Second
	}
	if o.Prefix == "" {
		o.Prefix = "/cleave"
	}
	o.Prefix = strings.TrimSuffix(o.Prefix, "/")
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 10 * time.Second
	}
}

// nameChars are the characters a node name may hold.
const nameChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_"

// Validate reports what is wrong with the options (after EnsureDefaults).
func (o *Options) Validate() error {
	var errs []error
	if len(o.Endpoints) == 0 {
		errs = append(errs, errors.New("no etcd endpoint"))
	}
	for _, ep := range o.Endpoints {
		if _, _, err := net.SplitHostPort(ep); err != nil {
			errs = append(errs, fmt.Errorf("etcd endpoint %q: want host:port", ep))
		}
	}
	if o.NodeName == "" {
		errs = append(errs, errors.New("a cluster node needs a name (--node-name)"))
	}
	for _, r := range o.NodeName {
		if !strings.ContainsRune(nameChars, r) {
			errs = append(errs, fmt.Errorf("node name %q: only letters, digits, '.', '-' and '_'", o.NodeName))
			break
		}
	}
	if _, port, err := net.SplitHostPort(o.Advertise); err != nil || port == "0" {
		errs = append(errs, fmt.Errorf("advertise address %q: want host:port with a fixed port", o.Advertise))
	}
	if o.LeaseTTL < time.Second {
		errs = append(errs, fmt.Errorf("lease TTL %v: at least 1s", o.LeaseTTL))
	}
	if !strings.HasPrefix(o.Prefix, "/") {
		errs = append(errs, fmt.Errorf("etcd prefix %q: must start with /", o.Prefix))
	}
	return errors.Join(errs...)
}

// Keys of the cluster under Options.Prefix:
//
//	/nodes/<name>           → Member (JSON), under the node's lease: present while it is up
//	/shards/<id>            → Placement (JSON): which node owns shard id; never leased
//	/catalog/rev            → "" : every catalog change rewrites it, so its ModRevision is the
//	                          catalog's revision and the condition of the next change
//	/catalog/rec/<hex key>  → a catalog record (store.CatalogOp), keyed by its store key
//	/manager/<lease>        → the partition manager election (concurrency.Election)
func (o *Options) key(parts ...string) string {
	return o.Prefix + "/" + strings.Join(parts, "/")
}
