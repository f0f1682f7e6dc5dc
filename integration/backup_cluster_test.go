package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestBackupClusterDuringWrites runs `cleave backup` against a cluster of 3 nodes (each
// shard a raft group of three copies) while 8 clients, spread over the nodes, insert, update
// and delete; restores it with `cleave restore` into a new etcd and 3 new data directories,
// starts 3 nodes on them and checks the restored cluster against the clients' log of
// acknowledged writes: it holds exactly the writes whose operationTime is before the
// backup's cluster time, its shards get their three copies back, and validate finds every
// collection clean.
func TestBackupClusterDuringWrites(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3)
	ctx := context.Background()
	dbn := dbName(t)
	const writers = 8
	clients := make([]*mongo.Client, len(nodes))
	for i, n := range nodes {
		clients[i] = n.client(t, options.Client().SetMaxPoolSize(writers))
	}
	if err := clients[0].Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: dbn + ".docs"},
		{Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}}).Err(); err != nil {
		t.Fatalf("shardCollection: %v", err)
	}
	var (
		mu  sync.Mutex
		log []loggedWrite
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		c := clients[w%len(clients)]
		wg.Go(func() {
			if err := backupWriter(ctx, c, c.Database(dbn), w, stop, func(lw loggedWrite) {
				mu.Lock()
				log = append(log, lw)
				mu.Unlock()
			}); err != nil {
				errs <- err
			}
		})
	}
	time.Sleep(time.Second)
	dir := filepath.Join(t.TempDir(), "backup")
	out, err := exec.Command(binary, "backup", "--to", dir, "--uri", nodes[1].uri()).CombinedOutput()
	if err != nil {
		t.Fatalf("cleave backup: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	time.Sleep(500 * time.Millisecond) // writes after the backup, which it must not hold
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("writer: %v", err)
	}
	cut := manifestClusterTime(t, dir)
	checkClusterManifest(t, dir)

	restored := restoreClusterBackup(t, dir, 3)
	rc := restored[2].client(t)
	waitReplicated(t, rc, 3, 3, 90*time.Second)
	checkReplicasAgree(t, restored) // the copies added after the restore hold its documents too
	before, after := checkRestored(t, rc.Database(dbn), log, cut)
	if before == 0 || after == 0 {
		t.Errorf("%d writes before the backup's cluster time and %d after: the backup did not fall mid-load", before, after)
	}
	for _, coll := range []string{"docs", "counters"} {
		var res bson.M
		if err := rc.Database(dbn).RunCommand(ctx, bson.D{{Key: "validate", Value: coll}}).Decode(&res); err != nil {
			t.Fatalf("validate %s: %v", coll, err)
		}
		if res["valid"] != true {
			t.Errorf("validate %s: %v", coll, res)
		}
	}
}

// checkClusterManifest checks the shape of a cluster backup's manifest: one checkpoint per
// shard, each naming the node whose copy it is, and the cluster's metadata.
func checkClusterManifest(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Shards []struct {
			ID   int    `json:"id"`
			Node string `json:"node"`
		} `json:"shards"`
		Cluster *struct {
			Nodes        []string `json:"nodes"`
			MetadataKeys int      `json:"metadataKeys"`
		} `json:"cluster"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Shards) != 3 || m.Cluster == nil || len(m.Cluster.Nodes) != 3 || m.Cluster.MetadataKeys == 0 {
		t.Fatalf("manifest of a 3-node backup:\n%s", b)
	}
	for _, s := range m.Shards {
		if s.Node == "" {
			t.Errorf("shard %d names no node:\n%s", s.ID, b)
		}
	}
}

// restoreClusterBackup restores the cluster backup in dir with `cleave restore` into a new
// etcd and the data directories of n new nodes, starts them and returns them.
func restoreClusterBackup(t *testing.T, dir string, n int) []*server {
	t.Helper()
	return restoreClusterBackupArgs(t, dir, n)
}

// restoreClusterBackupArgs is restoreClusterBackup with more arguments for `cleave restore`
// (--until and --log-from).
func restoreClusterBackupArgs(t *testing.T, dir string, n int, extra ...string) []*server {
	t.Helper()
	etcd := clusterEtcd(t)
	eps := strings.Join(etcd.Endpoints(), ",")
	args := append([]string{"restore", "--from", dir, "--etcd", eps}, extra...)
	var nodes []*server
	for i := range n {
		name := fmt.Sprintf("node-%c", 'a'+i)
		s := &server{t: t, dir: t.TempDir(), args: []string{"--etcd", eps, "--node-name", name,
			"--etcd-lease-ttl", "2s", "--replicas", "3", "--shards", "1"}}
		nodes = append(nodes, s)
		args = append(args, "--node", name+"="+filepath.Join(s.dir, "data"))
	}
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("cleave restore: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	for _, s := range nodes {
		s.start()
		t.Cleanup(s.stop)
	}
	return nodes
}
