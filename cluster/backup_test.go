package cluster

import (
	"encoding/json"
	"testing"

	"github.com/cleavedb/cleave/store"
)

// TestRestoredKVs: a restore writes the catalog as it was, each shard placed on its new
// node as one copy under a new replica id (above the backup's counter, which moves past
// them), draining marks kept, and the catalog's revision key last.
func TestRestoredKVs(t *testing.T) {
	p0, _ := json.Marshal(Placement{Node: "a", Replicas: []Replica{{ID: 1, Node: "a"}, {ID: 4, Node: "b"}, {ID: 6, Node: "c"}}})
	p1, _ := json.Marshal(Placement{Node: "b", Draining: true, Replicas: []Replica{{ID: 2, Node: "b"}}})
	md := &store.ClusterMetadata{KVs: []store.ClusterKV{
		{Key: "catalog/rec/0a", Value: []byte{1, 2}},
		{Key: "catalog/rev", Value: nil},
		{Key: "replica-ids", Value: []byte("6")},
		{Key: "shards/0", Value: p0},
		{Key: "shards/1", Value: p1},
	}}
	kvs, placed, err := restoredKVs(md, map[int]string{0: "x", 1: "y"})
	if err != nil {
		t.Fatal(err)
	}
	if len(kvs) != 5 || kvs[0].Key != "catalog/rec/0a" || kvs[4].Key != "catalog/rev" || kvs[3].Key != "replica-ids" || string(kvs[3].Value) != "8" {
		t.Fatalf("kvs = %+v", kvs)
	}
	want := map[int]Placement{
		0: {Node: "x", Replicas: []Replica{{ID: 7, Node: "x"}}},
		1: {Node: "y", Draining: true, Replicas: []Replica{{ID: 8, Node: "y"}}},
	}
	for id, p := range want {
		got, _ := json.Marshal(placed[id])
		w, _ := json.Marshal(p)
		if string(got) != string(w) {
			t.Errorf("shard %d placed %s, want %s", id, got, w)
		}
	}
	if _, _, err := restoredKVs(md, map[int]string{0: "x"}); err == nil {
		t.Error("a shard without a node: no error")
	}
}

// TestLasting: a backup keeps the catalog, the placement and the replica-id counter, not
// what belongs to running nodes.
func TestLasting(t *testing.T) {
	for key, want := range map[string]bool{
		"catalog/rev": true, "catalog/rec/00ff": true, "shards/3": true, "replica-ids": true,
		"nodes/a": false, "manager/694d8a": false, "shards/3/leader": false,
	} {
		if got := lasting(key); got != want {
			t.Errorf("lasting(%q) = %v, want %v", key, got, want)
		}
	}
}
