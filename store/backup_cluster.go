package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/zeebo/xxh3"
)

// A cluster's backup holds one checkpoint per shard, of one copy of it (shard-<id>/, by the
// shard's cluster-wide id), and the cluster's metadata at the same moment: the keys of its
// catalog and placement in etcd (ClusterMetadata, in ClusterMetadataName). Restoring it lays
// each shard out as a new copy on a node of a new cluster (RestoreClusterShards: the
// checkpoint without the applied state of the raft group it came from) and writes the
// metadata into that cluster's etcd (package cluster).

// ClusterMetadataName is the metadata's file name in a cluster's backup.
const ClusterMetadataName = "cluster-metadata.json"

// ClusterMetadata is a cluster's metadata as a backup holds it: every etcd key under the
// cluster's prefix that outlives its nodes (the catalog, the placement), relative to the
// prefix, at one etcd revision.
type ClusterMetadata struct {
	// Revision is etcd's revision the keys were read at; CatalogRevision the catalog's then
	// (the modification revision of its revision key).
	Revision        int64       `json:"revision"`
	CatalogRevision int64       `json:"catalogRevision"`
	KVs             []ClusterKV `json:"kvs"`
}

// ClusterKV is one etcd key and its value.
type ClusterKV struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// WriteClusterMetadata writes md into backup directory dir, synced, and returns the
// manifest's description of it (MetadataFile, MetadataKeys, MetadataChecksum).
func WriteClusterMetadata(dir string, md *ClusterMetadata) (ManifestCluster, error) {
	b, err := json.Marshal(md)
	if err != nil {
		return ManifestCluster{}, err
	}
	f, err := os.OpenFile(filepath.Join(dir, ClusterMetadataName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return ManifestCluster{}, err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		return ManifestCluster{}, err
	}
	return ManifestCluster{MetadataFile: ClusterMetadataName, MetadataKeys: len(md.KVs), MetadataChecksum: hex64(xxh3.Hash(b))}, nil
}

// ReadClusterMetadata reads the metadata of the cluster backup in dir whose manifest is m,
// and checks it against m.
func ReadClusterMetadata(dir string, m *Manifest) (*ClusterMetadata, error) {
	if m.Cluster == nil {
		return nil, fmt.Errorf("%w: %s is the backup of a single server, not of a cluster", ErrBadManifest, dir)
	}
	b, err := os.ReadFile(filepath.Join(dir, m.Cluster.MetadataFile))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadManifest, err)
	}
	if sum := hex64(xxh3.Hash(b)); sum != m.Cluster.MetadataChecksum {
		return nil, fmt.Errorf("%w: the cluster's metadata has checksum %s, the manifest says %s", ErrBadManifest, sum, m.Cluster.MetadataChecksum)
	}
	var md ClusterMetadata
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("%w: the cluster's metadata: %w", ErrBadManifest, err)
	}
	if len(md.KVs) != m.Cluster.MetadataKeys {
		return nil, fmt.Errorf("%w: the cluster's metadata holds %d keys, the manifest says %d", ErrBadManifest, len(md.KVs), m.Cluster.MetadataKeys)
	}
	return &md, nil
}

// ClusterRestoreOptions says where RestoreClusterShards lays a cluster's backup out.
type ClusterRestoreOptions struct {
	// From is the backup directory.
	From string
	// Targets is the store directory each shard of the backup goes to, by shard id (a
	// node's <dir>/replica-<id>): missing or empty.
	Targets map[int]string
	// ServerVersion is the running binary's.
	ServerVersion string
}

// RestoreClusterShards copies every shard of the cluster backup in o.From into its target
// directory, as a new copy of the shard (without the applied state of the raft group it was
// taken from: the shard starts a new group), and verifies every copy and collection against
// the manifest. It refuses what Restore refuses, a backup of a single server, and a shard
// without a target; when a copy or its check fails, what it copied is removed.
func RestoreClusterShards(o ClusterRestoreOptions) (*Manifest, error) {
	m, err := readRestorable(o.From, o.ServerVersion)
	if err != nil {
		return nil, err
	}
	if m.Cluster == nil {
		return nil, fmt.Errorf("%w: %s is the backup of a single server: restore it with --dir", ErrBadManifest, o.From)
	}
	for _, s := range m.Shards {
		dst, ok := o.Targets[s.ID]
		if !ok {
			return nil, fmt.Errorf("store: shard %d of the backup has no target directory", s.ID)
		}
		if err := CheckEmptyDir(dst); err != nil {
			return nil, err
		}
	}
	digests := make([]DirDigest, len(m.Shards))
	for i, s := range m.Shards {
		if digests[i], err = restoreClusterShard(o.From, o.Targets[s.ID], s); err != nil {
			break
		}
	}
	if err == nil {
		err = VerifyCollections(m, digests)
	}
	if err != nil {
		for _, s := range m.Shards {
			_ = os.RemoveAll(o.Targets[s.ID])
		}
		return nil, err
	}
	return m, nil
}

// restoreClusterShard copies shard s of the backup in from into dst, clears its replica
// state and verifies it.
func restoreClusterShard(from, dst string, s ManifestShard) (DirDigest, error) {
	_ = os.Remove(dst) // missing or empty: copyDir creates it
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return DirDigest{}, err
	}
	if err := copyDir(filepath.Join(from, s.Dir), dst); err != nil {
		return DirDigest{}, fmt.Errorf("shard %d: %w", s.ID, err)
	}
	if err := restoreReused(s, dst); err != nil {
		return DirDigest{}, err
	}
	if err := ClearReplicaState(dst); err != nil {
		return DirDigest{}, fmt.Errorf("shard %d: %w", s.ID, err)
	}
	return VerifyShard(dst, s)
}

// ClearReplicaState removes the applied state of the raft group from the replica's database
// in dir (closed): the index and term of the last entry applied, which belong to the group
// the copy was taken from. The database then starts a new group, as a new shard's does.
func ClearReplicaState(dir string) error {
	pdb, err := pebble.Open(dir, &pebble.Options{Merger: statsMerger, Logger: quietLogger{}})
	if err != nil {
		return fmt.Errorf("store: open %s: %w", dir, err)
	}
	err = pdb.Delete(replicaAppliedKey, pebble.Sync)
	return errors.Join(err, pdb.Close())
}
