package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// Member is a node as it registers itself under its lease.
type Member struct {
	Name      string    `json:"name"`
	Advertise string    `json:"advertise"` // host:port of its MongoDB wire listener
	Shards    []int     `json:"shards"`    // the shards it owns (Placement)
	Started   time.Time `json:"started"`
}

// Node is this process's membership in a cluster: its etcd client, its registration under a
// lease (renewed in the background; re-registered under a new lease if the old one expired),
// its candidacy for partition manager, and cached views of the members and the shard
// placement. Join returns it; Close leaves the cluster.
type Node struct {
	opts    Options
	log     *zap.Logger
	cli     *clientv3.Client
	self    Member
	members *mirror // /nodes/
	shards  *mirror // /shards/
	// shardsView and membersView are the mirrors decoded at their latest version.
	shardsView  atomic.Pointer[shardsView]
	membersView atomic.Pointer[membersView]
	leader      atomic.Bool
	ctx         context.Context
	cancel      context.CancelFunc
	bg          sync.WaitGroup
	mu          struct {
		sync.Mutex
		session  *concurrency.Session
		election *concurrency.Election
	}
}

// Join connects to etcd, takes (or allocates) the node's shards — shards of them, see
// AssignShards —, registers the node under a lease and starts campaigning for partition
// manager. It returns once the node is registered.
func Join(ctx context.Context, opts Options, shards int, log *zap.Logger) (*Node, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints: opts.Endpoints, DialTimeout: opts.DialTimeout,
		Logger: log.Named("etcd").WithOptions(zap.IncreaseLevel(zap.WarnLevel)),
	})
	if err != nil {
		return nil, fmt.Errorf("cannot reach etcd at %s: %w", strings.Join(opts.Endpoints, ","), err)
	}
	n := &Node{opts: opts, log: log, cli: cli}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.join(ctx, shards); err != nil {
		n.cancel()
		_ = cli.Close()
		return nil, err
	}
	return n, nil
}

// join is Join after the client is made.
func (n *Node) join(ctx context.Context, shards int) error {
	rctx, cancel := context.WithTimeout(ctx, n.opts.RequestTimeout)
	defer cancel()
	ids, err := n.assignShards(rctx, shards)
	if err != nil {
		return err
	}
	n.self = Member{Name: n.opts.NodeName, Advertise: n.opts.Advertise, Shards: ids, Started: time.Now().UTC()}
	if n.members, err = newMirror(rctx, n.cli, n.opts.key("nodes")+"/", n.log); err != nil {
		return fmt.Errorf("cannot read the cluster's members: %w", err)
	}
	if n.shards, err = newMirror(rctx, n.cli, n.opts.key("shards")+"/", n.log); err != nil {
		return fmt.Errorf("cannot read the cluster's shards: %w", err)
	}
	s, err := n.register(rctx)
	if err != nil {
		return err
	}
	n.bg.Add(3)
	go func() { defer n.bg.Done(); n.members.run(n.ctx) }()
	go func() { defer n.bg.Done(); n.shards.run(n.ctx) }()
	go func() { defer n.bg.Done(); n.keepMembership(s) }()
	return nil
}

// register takes a lease, keeps it alive in the background (a session) and writes the
// node's Member under it. Every etcd call it makes is bounded by ctx: the lease is granted
// here rather than by concurrency.NewSession, which grants it under the client's own
// context and would wait for etcd forever (a node that lost its lease while etcd was down
// never stopped).
func (n *Node) register(ctx context.Context) (*concurrency.Session, error) {
	ttl := int(n.opts.LeaseTTL / time.Second)
	lease, err := n.cli.Grant(ctx, int64(ttl))
	if err != nil {
		return nil, fmt.Errorf("cannot take a lease in etcd: %w", err)
	}
	// NB: the session's own context stays the client's, so that its keep-alive outlives
	// ctx; Close revokes the lease itself, under a deadline.
	s, err := concurrency.NewSession(n.cli, concurrency.WithTTL(ttl), concurrency.WithLease(lease.ID))
	if err != nil {
		n.revoke(ctx, lease.ID)
		return nil, fmt.Errorf("cannot take a lease in etcd: %w", err)
	}
	v, _ := json.Marshal(n.self)
	if _, err := n.cli.Put(ctx, n.opts.key("nodes", n.opts.NodeName), string(v), clientv3.WithLease(s.Lease())); err != nil {
		s.Orphan()
		n.revoke(ctx, s.Lease())
		return nil, fmt.Errorf("cannot register node %s: %w", n.opts.NodeName, err)
	}
	n.mu.Lock()
	n.mu.session = s
	n.mu.election = concurrency.NewElection(s, n.opts.key("manager"))
	n.mu.Unlock()
	n.log.Info("joined the cluster", zap.String("node", n.opts.NodeName), zap.String("advertise", n.opts.Advertise),
		zap.Ints("shards", n.self.Shards), zap.Int64("lease", int64(s.Lease())))
	return s, nil
}

// revoke revokes lease id (its keys go at once rather than a TTL later), waiting for etcd at
// most until ctx ends or RequestTimeout; a failure is logged: the lease expires by itself.
func (n *Node) revoke(ctx context.Context, id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(ctx, n.opts.RequestTimeout)
	defer cancel()
	if _, err := n.cli.Revoke(ctx, id); err != nil {
		n.log.Warn("cannot revoke the cluster lease; it expires by itself", zap.Int64("lease", int64(id)), zap.Error(err))
	}
}

// keepMembership campaigns for partition manager under session s and, when s ends (its
// lease expired: etcd did not hear from the node for a TTL), registers again under a new
// lease, until Close.
func (n *Node) keepMembership(s *concurrency.Session) {
	for {
		n.campaign(s)
		if n.ctx.Err() != nil {
			return
		}
		n.log.Warn("lost the cluster lease; registering again", zap.String("node", n.opts.NodeName))
		for {
			ctx, cancel := context.WithTimeout(n.ctx, n.opts.RequestTimeout)
			var err error
			s, err = n.register(ctx)
			cancel()
			if err == nil {
				break
			}
			if n.ctx.Err() != nil {
				return
			}
			n.log.Warn("cannot register in the cluster", zap.Error(err))
			sleep(n.ctx, time.Second)
		}
	}
}

// campaign runs for partition manager under s, and holds the role until s ends.
func (n *Node) campaign(s *concurrency.Session) {
	ctx, cancel := context.WithCancel(n.ctx)
	defer cancel()
	go func() {
		select {
		case <-s.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	n.mu.Lock()
	e := n.mu.election
	n.mu.Unlock()
	if err := e.Campaign(ctx, n.opts.NodeName); err != nil {
		<-ctx.Done() // session over or Close; keepMembership decides
		return
	}
	n.leader.Store(true)
	n.log.Info("this node is the partition manager", zap.String("node", n.opts.NodeName))
	<-ctx.Done()
	n.leader.Store(false)
}

// Name returns the node's name.
func (n *Node) Name() string { return n.opts.NodeName }

// Incarnation returns the lease this node is registered under now: it changes when the node
// restarts or registers again after losing its lease (store.Guard).
func (n *Node) Incarnation() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.session == nil {
		return 0
	}
	return int64(n.mu.session.Lease())
}

// Self returns the node's own registration.
func (n *Node) Self() Member { return n.self }

// Leader reports whether this node is the partition manager now: it won the election and its
// lease is alive. It never waits on etcd.
func (n *Node) Leader() bool { return n.leader.Load() }

// Members returns the nodes registered now (their leases alive), sorted by name: a slice
// shared by every caller until the next change (decoded once per change), never to modify.
func (n *Node) Members() []Member {
	ver := n.members.version()
	if v := n.membersView.Load(); v != nil && v.ver == ver {
		return v.members
	}
	var out []Member
	for _, raw := range n.members.snapshot() {
		var m Member
		if json.Unmarshal(raw, &m) == nil {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	n.membersView.Store(&membersView{ver: ver, members: out})
	return out
}

// membersView is /nodes/ decoded at one version of its mirror.
type membersView struct {
	ver     uint64
	members []Member
}

// Client returns the etcd client (for the catalog log).
func (n *Node) Client() *clientv3.Client { return n.cli }

// closeTimeout bounds what Close waits for etcd (resigning and revoking the lease): a node
// shutting down must not wait on an unreachable etcd.
const closeTimeout = 2 * time.Second

// Close leaves the cluster: it resigns as partition manager and revokes the lease, so the
// node's registration disappears at once rather than a TTL later, then closes the client.
// It waits for etcd at most closeTimeout in all (an unreachable etcd lets the lease expire
// by itself, a TTL later): the client is closed before the background goroutines are waited
// for, which ends whatever they still wait on etcd for (a Campaign cancelled by Close
// resigns under the client's own context, which only Close of the client ends).
func (n *Node) Close() error {
	n.mu.Lock()
	e := n.mu.election
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), min(n.opts.RequestTimeout, closeTimeout))
	defer cancel()
	if n.leader.Load() && e != nil {
		if err := e.Resign(ctx); err != nil {
			n.log.Warn("cannot resign as partition manager; the lease's revocation or expiry ends the role", zap.Error(err))
		}
	}
	n.cancel() // keepMembership registers no more
	n.mu.Lock()
	s := n.mu.session // keepMembership may have registered again meanwhile
	n.mu.Unlock()
	if s != nil {
		s.Orphan() // its keep-alive stops
		n.revoke(ctx, s.Lease())
	}
	err := n.cli.Close()
	n.bg.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil // the client's own context, which Close cancels
	}
	return err
}
