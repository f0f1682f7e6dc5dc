package cluster

import (
	"context"
	"errors"

	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"
)

// Settings every node shares: the documents of config.settings that MongoDB keeps on its
// config servers (the balancer's switch), each the raw BSON document under /settings/<_id>.
// A node's own config database stays node-local (store.NodeLocalDB); the executor mirrors
// these documents into it, so that a read of config.settings on any node sees them.

// settingKey is the etcd key of the shared settings document id.
func (n *Node) settingKey(id string) string { return n.opts.key("settings", id) }

// PutSetting replaces the shared settings document id with doc, for every node.
func (n *Node) PutSetting(ctx context.Context, id string, doc []byte) error {
	ctx, cancel := context.WithTimeout(ctx, n.opts.RequestTimeout)
	defer cancel()
	if _, err := n.cli.Put(ctx, n.settingKey(id), string(doc)); err != nil {
		return err
	}
	n.log.Info("cluster setting written", zap.String("id", id))
	return nil
}

// Setting returns the shared settings document id as etcd holds it now (a linearizable
// read), nil when there is none.
func (n *Node) Setting(ctx context.Context, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, n.opts.RequestTimeout)
	defer cancel()
	resp, err := n.cli.Get(ctx, n.settingKey(id))
	if err != nil || len(resp.Kvs) == 0 {
		return nil, err
	}
	return resp.Kvs[0].Value, nil
}

// ManagerName returns the name of the node elected partition manager now, "" when none is.
func (n *Node) ManagerName(ctx context.Context) (string, error) {
	n.mu.Lock()
	e := n.mu.election
	n.mu.Unlock()
	if e == nil {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, n.opts.RequestTimeout)
	defer cancel()
	resp, err := e.Leader(ctx)
	if errors.Is(err, concurrency.ErrElectionNoLeader) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(resp.Kvs[0].Value), nil
}
