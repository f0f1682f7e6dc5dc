package integration

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// consoleCopies matches a copy of a shard on the console's nodes page.
var consoleCopies = regexp.MustCompile(`class="copy" data-node="([^"]+)" data-shard="([^"]+)" data-state="([^"]+)"`)

// TestConsoleClusterNodes starts three nodes keeping three copies of each of their shards:
// every node's /readyz answers 200 and its nodes page shows each shard's three copies, one
// of them the leader. Once a node is killed, the others show it down and, its shards'
// leadership having moved, answer ready again.
func TestConsoleClusterNodes(t *testing.T) {
	t.Parallel()
	_, nodes, _ := replicatedNodes(t, 3)
	for _, n := range nodes {
		waitFor(t, time.Minute, n.httpAddr+"/readyz to answer 200", func() bool {
			code, _, _ := consoleGet(t, n, "/readyz")
			return code == http.StatusOK
		})
	}
	code, page, _ := consoleGet(t, nodes[0], "/nodes")
	if code != http.StatusOK {
		t.Fatalf("/nodes: %d", code)
	}
	copies, leaders := map[string]int{}, map[string]int{}
	for _, m := range consoleCopies.FindAllStringSubmatch(page, -1) {
		copies[m[2]]++
		if m[3] == "PRIMARY" {
			leaders[m[2]]++
		}
	}
	if len(copies) != 3 {
		t.Fatalf("the nodes page shows shards %v, want 3 shards:\n%s", copies, page)
	}
	for s, n := range copies {
		if n != 3 || leaders[s] != 1 {
			t.Errorf("%s: %d copies and %d leaders on the nodes page, want 3 and 1", s, n, leaders[s])
		}
	}

	c := nodes[0].client(t)
	shardColl(t, c, dbName(t)+".people", "region", bson.E{Key: "numInitialChunks", Value: 3})
	code, page, _ = consoleGet(t, nodes[0], "/collections/"+dbName(t)+"/people")
	if bars := regexp.MustCompile(`class="bar"[^>]* data-node="node-[abc]"`).FindAllString(page, -1); code != http.StatusOK || len(bars) != 9 {
		t.Errorf("the collection page: %d, %d bars naming their node, want 9 (3 charts of 3 partitions)", code, len(bars))
	}

	nodes[2].kill()
	waitFor(t, time.Minute, "node-c shown down and node-a ready again", func() bool {
		_, page, _ := consoleGet(t, nodes[0], "/nodes")
		code, _, _ := consoleGet(t, nodes[0], "/readyz")
		return regexp.MustCompile(`data-node="node-c" data-up="false"`).MatchString(page) && code == http.StatusOK
	})
}
