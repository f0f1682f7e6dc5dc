package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/tools/pitr"
)

// isURI reports whether a --log-from names a server rather than a backup directory.
func isURI(s string) bool {
	return strings.HasPrefix(s, "mongodb://") || strings.HasPrefix(s, "mongodb+srv://")
}

// pointInTimeCluster replays onto the cluster just restored from m (its metadata in the etcd
// at endpoints under prefix, node name → data directory in nodes, perNode shards each) the
// change log of the cluster at logFrom (a mongodb:// URI of any of its nodes) up to until.
// It starts every restored node as a child of this process on 127.0.0.1, writes through the
// first, and stops them all at the end.
func pointInTimeCluster(m *store.Manifest, endpoints, prefix string, nodes nodeDirs, names []string, perNode map[string]int,
	logFrom string, until pitr.Point, stdout, stderr io.Writer,
) error {
	tmp, err := os.MkdirTemp("", ".cleave-pitr-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	var children []*child
	defer func() {
		for _, ch := range children {
			ch.stop()
		}
	}()
	for _, n := range names {
		ch, err := startChild(nodes[n], max(perNode[n], 1), filepath.Join(tmp, n), "--etcd", endpoints, "--etcd-prefix", prefix,
			"--node-name", n, "--replicas", strconv.Itoa(m.Cluster.Replicas))
		if err != nil {
			return fmt.Errorf("node %s: %w", n, err)
		}
		children = append(children, ch)
	}
	o := pitr.Options{From: m.ClusterTime, Until: until, SourceURI: logFrom, SourceName: logFrom, TargetURI: children[0].uri}
	return replay(m, o, until, stdout, stderr)
}
