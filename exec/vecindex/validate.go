package vecindex

import (
	"errors"
	"fmt"

	"github.com/cleavedb/cleave/exec/catalog"
)

// Validate checks the graphs of ci's vector search indexes on this node's shards, for the
// validate command, and returns what it found wrong, in validate's words: a graph whose
// links break its invariants (vector.Graph.Check), a document with a vector and no node in
// the graph (or a node of an older version of it), a node whose document is gone. Each graph
// is brought up to date first (loaded or built when needed); documents written while it is
// checked are not judged.
func (r *Registry) Validate(ci *catalog.Coll, shards []catalog.Shard) ([]string, error) {
	var out []string
	for _, rec := range Records(ci.Meta) {
		if rec.Type != TypeVectorSearch {
			continue
		}
		def, err := rec.Def()
		if err != nil {
			return nil, err
		}
		for _, i := range ownerShards(ci.Meta) {
			if _, remote := shards[i].Node(); remote {
				continue // its node validates it
			}
			for _, field := range def.Vectors {
				x := r.graph(i, shards[i], ci.Meta.ID, rec, def, field)
				found, err := x.check()
				if err != nil {
					return nil, err
				}
				for _, f := range found {
					out = append(out, fmt.Sprintf("vector search index '%s' (path '%s') on shard %d: %s", rec.Name, field.Path, i, f))
				}
			}
		}
	}
	return out, nil
}

// check brings the graph up to date and compares it with the shard's documents (check's
// findings), then applies the writes that raced the comparison.
func (x *shardIndex) check() ([]string, error) {
	if err := x.sync(); err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []string
	if err := x.g.Check(); err != nil {
		out = append(out, err.Error())
	}
	missing, stale, gone, err := x.compare()
	if err != nil {
		return nil, err
	}
	docs, overflow := x.wlog.Take() // written during the comparison: not judged
	if overflow {
		missing, stale, gone = nil, nil, nil
		_, _, err = x.reconcile()
	} else {
		racing := map[string]bool{}
		for _, d := range docs {
			racing[nodeKey(d.Hash, d.ID)] = true
		}
		drop := func(keys []string) []string {
			kept := keys[:0]
			for _, k := range keys {
				if !racing[k] {
					kept = append(kept, k)
				}
			}
			return kept
		}
		missing, stale, gone = drop(missing), drop(stale), drop(gone)
		for _, d := range docs {
			if err = x.apply(d.Hash, d.ID); err != nil {
				break
			}
		}
	}
	x.save()
	for _, f := range []struct {
		keys []string
		what string
	}{{missing, "documents with a vector have no node in the graph"},
		{stale, "documents changed since their node was added to the graph"},
		{gone, "nodes of the graph stand for documents that no longer exist"}} {
		if len(f.keys) > 0 {
			out = append(out, fmt.Sprintf("%d %s", len(f.keys), f.what))
		}
	}
	return out, err
}

// compare scans the shard's documents against the graph's live nodes and returns the node
// keys (nodeKey) of the documents without a node, of those whose node holds an older version,
// and of the live nodes without a document.
func (x *shardIndex) compare() (missing, stale, gone []string, err error) {
	seen := make([]bool, x.g.Len())
	it, err := x.sh.NewDocIter(x.coll, 0, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	for it.Next() {
		k := nodeKey(it.Hash(), it.ID())
		n, has := x.byKey[k]
		if has {
			seen[n] = true
		}
		vec, ok := x.vectorOf(it.Doc())
		switch {
		case ok && !has:
			missing = append(missing, k)
		case has && (!ok || !x.g.Holds(n, vec) || string(x.nodes[n].filter) != string(x.filterDoc(it.Doc()))):
			stale = append(stale, k)
		}
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, nil, nil, err
	}
	for n, ok := range seen {
		if !ok && !x.g.Deleted(int32(n)) {
			gone = append(gone, nodeKey(x.nodes[n].hash, x.nodes[n].id))
		}
	}
	return missing, stale, gone, nil
}
