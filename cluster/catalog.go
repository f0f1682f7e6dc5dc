package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/store"
)

// catalogLog is the store.SharedLog of a cluster: the catalog's records under
// /catalog/rec/, and /catalog/rev, whose ModRevision is the catalog's revision. Every change
// is one etcd transaction conditioned on that revision being the one the change was computed
// from, and rewrites it: so catalog changes form one chain, and two nodes can never both
// commit a change computed from the same state.
type catalogLog struct {
	n *Node
}

// revKey and recPrefix are the catalog's keys.
func (l catalogLog) revKey() string    { return l.n.opts.key("catalog", "rev") }
func (l catalogLog) recPrefix() string { return l.n.opts.key("catalog", "rec") + "/" }

// recKey returns the etcd key of catalog record k (hex, so that etcdctl prints it).
func (l catalogLog) recKey(k []byte) string { return l.recPrefix() + hex.EncodeToString(k) }

// Commit implements store.SharedLog. A guard is the lease of the node's registration
// (/nodes/<name>): a node that restarted, or lost its lease, registered under another one;
// and with LeaderRev, the modification revision of the shard's leader record, which every
// new leader rewrites before it repairs the shard (replica/host).
func (l catalogLog) Commit(rev int64, ops []store.CatalogOp, guards []store.Guard) (int64, error) {
	ctx, cancel := context.WithTimeout(l.n.ctx, l.n.opts.RequestTimeout)
	defer cancel()
	puts := make([]clientv3.Op, 0, len(ops)+1)
	for _, op := range ops {
		if op.Value == nil {
			puts = append(puts, clientv3.OpDelete(l.recKey(op.Key)))
		} else {
			puts = append(puts, clientv3.OpPut(l.recKey(op.Key), string(op.Value)))
		}
	}
	puts = append(puts, clientv3.OpPut(l.revKey(), ""))
	conds := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(l.revKey()), "=", rev)}
	for _, g := range guards {
		conds = append(conds, clientv3.Compare(clientv3.LeaseValue(l.n.opts.key("nodes", g.Node)), "=", g.Incarnation))
		if g.LeaderRev > 0 {
			conds = append(conds, clientv3.Compare(clientv3.ModRevision(l.n.leaderKey(g.Shard)), "=", g.LeaderRev))
		}
	}
	resp, err := l.n.cli.Txn(ctx).
		If(conds...).
		Then(puts...).
		Else(clientv3.OpGet(l.revKey())).
		Commit()
	if err != nil {
		// NB: ambiguous: the change may have committed; if so, the watch applies it.
		return 0, fmt.Errorf("cannot commit a catalog change to etcd: %w", err)
	}
	if !resp.Succeeded {
		cur := int64(0)
		if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
			cur = kvs[0].ModRevision
		}
		if cur == rev && len(guards) > 0 { // the revision held: a guard failed
			return 0, fmt.Errorf("%w (%v)", store.ErrIncarnation, guards)
		}
		return 0, &store.ConflictError{Rev: cur}
	}
	return resp.Header.Revision, nil
}

// load reads the whole catalog: its records and its revision (0: never written).
func (l catalogLog) load(ctx context.Context) (image []store.CatalogOp, rev int64, err error) {
	resp, err := l.n.cli.Get(ctx, l.n.opts.key("catalog")+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, 0, fmt.Errorf("cannot read the cluster's catalog: %w", err)
	}
	for _, kv := range resp.Kvs {
		if string(kv.Key) == l.revKey() {
			rev = kv.ModRevision
			continue
		}
		op, err := l.decode(kv)
		if err != nil {
			return nil, 0, err
		}
		image = append(image, op)
	}
	return image, rev, nil
}

// decode turns a record's key-value into a catalog put (or a delete, for a deleted kv).
func (l catalogLog) decode(kv *mvccpb.KeyValue) (store.CatalogOp, error) {
	h, ok := strings.CutPrefix(string(kv.Key), l.recPrefix())
	k, err := hex.DecodeString(h)
	if !ok || err != nil {
		return store.CatalogOp{}, fmt.Errorf("corrupt catalog key %q in etcd", kv.Key)
	}
	return store.CatalogOp{Key: k, Value: kv.Value}, nil
}

// ShareCatalog makes cat the cluster's catalog on this node: the first node to join seeds an
// empty cluster catalog with its own; any other takes the cluster's (refusing to start if it
// holds collections the cluster does not know). It then follows the cluster's catalog
// changes until Close, calling dropped with the collections other nodes dropped (their local
// data is the caller's to delete). It returns once cat reflects the cluster's catalog.
func (n *Node) ShareCatalog(ctx context.Context, cat *store.Catalog, dropped func([]*store.Collection)) error {
	l := catalogLog{n: n}
	rctx, cancel := context.WithTimeout(ctx, n.opts.RequestTimeout)
	defer cancel()
	image, rev, err := l.load(rctx)
	if err != nil {
		return err
	}
	if rev == 0 {
		if image, err = cat.LocalImage(); err != nil {
			return err
		}
		rev, err = l.Commit(0, image, nil)
		var conflict *store.ConflictError
		switch {
		case errors.As(err, &conflict): // another node seeded it first: take theirs
			if image, rev, err = l.load(rctx); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			n.log.Info("seeded the cluster's catalog with this node's", zap.Int("records", len(image)))
		}
	}
	if err := cat.Share(l, rev, image); err != nil {
		return err
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		l.follow(cat, rev, dropped)
	}()
	return nil
}

// follow applies the catalog changes after revision rev to cat until the node closes,
// starting over from a full read when the watch fails (compaction, lost etcd).
func (l catalogLog) follow(cat *store.Catalog, rev int64, dropped func([]*store.Collection)) {
	ctx := l.n.ctx
	for ctx.Err() == nil {
		err := l.watch(ctx, cat, rev+1, dropped)
		if ctx.Err() != nil {
			return
		}
		l.n.log.Warn("catalog watch ended; reading the catalog again", zap.Error(err))
		for ctx.Err() == nil {
			rctx, cancel := context.WithTimeout(ctx, l.n.opts.RequestTimeout)
			image, r, err := l.load(rctx)
			cancel()
			if err == nil {
				var gone []*store.Collection
				if gone, err = cat.Resync(r, image); err == nil {
					rev = r
					if len(gone) > 0 && dropped != nil {
						dropped(gone)
					}
					break
				}
			}
			l.n.log.Warn("cannot read the cluster's catalog", zap.Error(err))
			sleep(ctx, 500*time.Millisecond)
		}
	}
}

// watch applies the changes from revision from on, one ApplyShared per etcd revision, until
// the watch fails.
func (l catalogLog) watch(ctx context.Context, cat *store.Catalog, from int64, dropped func([]*store.Collection)) error {
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	for resp := range l.n.cli.Watch(wctx, l.n.opts.key("catalog")+"/", clientv3.WithPrefix(), clientv3.WithRev(from)) {
		if err := resp.Err(); err != nil {
			return err
		}
		evs := resp.Events
		for len(evs) > 0 {
			rev := evs[0].Kv.ModRevision
			var ops []store.CatalogOp
			k := 0
			for ; k < len(evs) && evs[k].Kv.ModRevision == rev; k++ {
				if string(evs[k].Kv.Key) == l.revKey() {
					continue
				}
				op, err := l.decode(evs[k].Kv)
				if err != nil {
					return err
				}
				if evs[k].Type == clientv3.EventTypeDelete {
					op.Value = nil
				}
				ops = append(ops, op)
			}
			evs = evs[k:]
			gone, err := cat.ApplyShared(rev, ops)
			if err != nil {
				return err
			}
			if len(gone) > 0 && dropped != nil {
				dropped(gone)
			}
		}
	}
	return errWatchClosed
}

// Revision implements store.SharedLog: the ModRevision of /catalog/rev, read at the etcd
// cluster's current revision (etcd's reads are linearizable by default), within the
// request timeout. A node that waits until its catalog reaches it knows every change
// committed before the call, such as a partition's move to a shard it has just started to
// lead, or a collection another node has just created.
func (l catalogLog) Revision(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.n.opts.RequestTimeout)
	defer cancel()
	resp, err := l.n.cli.Get(ctx, l.revKey())
	if err != nil {
		return 0, fmt.Errorf("cannot read the catalog's revision: %w", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	return resp.Kvs[0].ModRevision, nil
}
