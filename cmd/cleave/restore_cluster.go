package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/cleavedb/cleave/cluster"
	"github.com/cleavedb/cleave/exec"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/tools/pitr"
)

// nodeDirs is the repeatable --node NAME=DIR flag of a cluster's restore.
type nodeDirs map[string]string

// String implements flag.Value.
func (n nodeDirs) String() string {
	var parts []string
	for name, dir := range n {
		parts = append(parts, name+"="+dir)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// Set implements flag.Value.
func (n nodeDirs) Set(s string) error {
	name, dir, ok := strings.Cut(s, "=")
	if !ok || name == "" || dir == "" {
		return fmt.Errorf("want NAME=DATADIR, not %q", s)
	}
	if _, dup := n[name]; dup {
		return fmt.Errorf("node %s named twice", name)
	}
	n[name] = dir
	return nil
}

// restoreCluster restores the cluster backup in from into a new cluster: the shards into
// the data directories of nodes (name → data directory), spread over them in turn, the
// metadata into the etcd at endpoints under prefix; with until, it then replays the change
// log of the cluster at logFrom up to that point (restore_cluster_pitr.go). It prints how to
// start each node.
func restoreCluster(from, endpoints, prefix string, nodes nodeDirs, until *pitr.Point, logFrom string, stdout, stderr io.Writer) int {
	start := time.Now()
	m, err := store.ReadManifest(from)
	if err == nil && m.Cluster == nil {
		err = fmt.Errorf("%w: %s is the backup of a single server: restore it with --dir", store.ErrBadManifest, from)
	}
	var md *store.ClusterMetadata
	if err == nil {
		md, err = store.ReadClusterMetadata(from, m)
	}
	if err != nil {
		say(stderr, "cleave restore: %v\n", restoreMessage(err))
		return 1
	}
	names := make([]string, 0, len(nodes))
	for n := range nodes {
		names = append(names, n)
	}
	slices.Sort(names)
	owners, targets, perNode := map[int]string{}, map[int]string{}, map[string]int{}
	for i, s := range m.Shards {
		node := names[i%len(names)]
		owners[s.ID] = node
		targets[s.ID] = filepath.Join(nodes[node], "replica-"+strconv.Itoa(s.ID))
		perNode[node]++
	}
	if _, err := store.RestoreClusterShards(store.ClusterRestoreOptions{From: from, Targets: targets, ServerVersion: exec.ServerVersion}); err != nil {
		say(stderr, "cleave restore: %v\n", restoreMessage(err))
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), cluster.RestoreTimeout)
	defer cancel()
	ro := cluster.RestoreOptions{Endpoints: strings.Split(endpoints, ","), Prefix: prefix, Owners: owners}
	if _, err := cluster.RestoreMetadata(ctx, ro, md, zap.NewNop()); err != nil {
		say(stderr, "cleave restore: %v (the shards' copies stay in the nodes' directories)\n", err)
		return 1
	}
	var docs int64
	for _, c := range m.Collections {
		docs += c.Count
	}
	say(stdout, "restored %d shards, %d collections, %d documents at cluster time %s onto %d nodes, verified in %d ms\n",
		len(m.Shards), len(m.Collections), docs, m.ClusterTimeString, len(names), time.Since(start).Milliseconds())
	if until != nil {
		if err := pointInTimeCluster(m, endpoints, ro.Prefix, nodes, names, perNode, logFrom, *until, stdout, stderr); err != nil {
			say(stderr, "cleave restore: %v; the nodes' directories and the etcd prefix %s hold the backup's state, not the point's: clear them before trying again\n", err, ro.Prefix)
			return 1
		}
	}
	for _, n := range names {
		say(stdout, "start it with: cleave --etcd %s --etcd-prefix %s --node-name %s --dir %s --shards %d --replicas %d --listen HOST:PORT\n",
			endpoints, ro.Prefix, n, nodes[n], max(perNode[n], 1), m.Cluster.Replicas)
	}
	return 0
}
