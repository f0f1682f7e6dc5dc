package store

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// directWrite finds the places that write a Pebble database of the store without going
// through Batch.Apply: a new batch, or a write, sync or commit straight on Pebble.
var directWrite = regexp.MustCompile(`pdb\.(NewBatch|NewIndexedBatch|Set|Delete|DeleteRange|Merge|Apply|ApplyNoSyncWait|Ingest\w*|LogData)\(|\.Commit\(pebble\.`)

// directWriteAllowed are the files that may write Pebble directly, and why: on a replicated
// shard every write must be an entry of its group's log (replicated.go), or its copies
// diverge. A new direct write fails TestReplicatedWritesGoThroughTheLog until it is routed
// through Batch.Apply or commitSynced, or listed here with its reason.
var directWriteAllowed = map[string]string{
	"batch.go":          "NewBatch: the Pebble batch a Batch builds; Apply commits it through applyPebble",
	"space.go":          "applyPebble: the one commit of a Batch, which proposes it when the DB is replicated",
	"replicated.go":     "the replicated path itself: ApplyReplicated, SyncApplied, commitSynced",
	"changes.go":        "TrimChanges builds its batch and commits it through commitSynced",
	"txnrec.go":         "DeleteTxnRecords builds its batch and commits it through commitSynced",
	"db.go":             "the format version a replica writes for itself at open (not part of the replicated state)",
	"catalog.go":        "the catalog's mutations, in the node's own store (never a replicated shard's)",
	"catalog_shared.go": "the catalog's mirror of etcd, in the node's own store (never a replicated shard's)",
	"spill.go":          "the temporary store of spilled sorts (never a shard)",
	"backup_cluster.go": "ClearReplicaState, on a restored copy before any group runs it: it starts a new group",
	"vecgraph.go":       "vector search graphs: derived state each copy builds for itself from its documents, left out of the replica checksum (eachStateKV)",
}

// TestReplicatedWritesGoThroughTheLog fails when code of the store writes Pebble directly
// outside the files allowed to (directWriteAllowed): such a write would reach only the copy
// it runs on.
func TestReplicatedWritesGoThroughTheLog(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			if !directWrite.MatchString(line) || strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			seen[f] = true
			if _, ok := directWriteAllowed[f]; !ok {
				t.Errorf("%s:%d writes Pebble directly: %s\n(route it through Batch.Apply or commitSynced, or say in directWriteAllowed why it may)",
					f, i+1, strings.TrimSpace(line))
			}
		}
	}
	for f := range directWriteAllowed {
		if !seen[f] {
			t.Errorf("directWriteAllowed lists %s, which writes Pebble directly no more: remove it", f)
		}
	}
}
