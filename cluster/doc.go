// Package cluster is a node's membership in a cleave cluster, on etcd (go.etcd.io/etcd/client/v3):
// cleave builds no consensus of its own.
//
// It owns:
//   - Join / Node: the node registers itself (Member: name, advertised address, shards) under
//     a lease it keeps alive; it is "up" exactly while that key exists. A crash lets the lease
//     expire after Options.LeaseTTL; Close revokes it at once. A node whose lease expired (a
//     long pause) registers again under a new one.
//   - Shard placement: shard ids are cluster-wide, allocated by transactions that only succeed
//     on an unused id, and placed on the node that took them (Placement); a restarting node
//     finds its shards again by its name.
//   - The partition manager election (concurrency.Election): at most one node's Leader() is
//     true at a time (while its lease lives).
//   - The shared catalog: ShareCatalog makes a store.Catalog commit every change through etcd
//     (catalogLog, a store.SharedLog) and follows the others' changes with a watch.
//
// Invariants: every catalog change is one etcd transaction conditioned on the catalog's
// revision the change was computed from (the ModRevision of /catalog/rev, which each change
// rewrites), so changes form one chain and no two nodes commit conflicting maps; each node
// applies the chain in order, so its catalog is always the cluster's at some revision;
// readers use the node's cached copies (store.Catalog.State, Members, Placement) and never
// wait on etcd.
//
//	n, err := cluster.Join(ctx, cluster.Options{Endpoints: eps, NodeName: "a", Advertise: "10.0.0.1:27017"}, shards, log)
//	ids := n.Self().Shards                   // local store k is shard ids[k]
//	err = n.ShareCatalog(ctx, cat, dropData) // cat now follows the cluster's catalog
//	if n.Leader() { /* decide splits and moves */ }
//	defer n.Close()
package cluster
