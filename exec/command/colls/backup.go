package colls

import (
	"context"
	"path/filepath"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/backup"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// backupCmd runs {backup: 1, to: "<dir>", incrementalFrom: "<dir>"} on admin: an online
// backup of every shard and the catalog at one cluster time into dir, a directory of the
// server's file system, absolute, missing or empty (exec/backup, docs/backup.md). Writes wait
// only while the shards' checkpoints are taken. It answers the backup's cluster time as its
// operationTime and in clusterTime, the shards, collections and documents it holds, how long
// writes waited (writePauseMicros) and how long it took; with incrementalFrom, a backup made
// before, it keeps only the sstables that one lacks (store.ListFiles) and says how many it
// reused. In cluster mode it backs up the whole cluster (backup_cluster.go).
func (h *Handlers) backupCmd(ctx context.Context, r *command.Request) error {
	const cmd = "backup"
	var to, from string
	var res *backup.Result
	err := args.ForEach(cmd, r.Body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "to":
			to, err = args.String(cmd, key, v)
		case "incrementalFrom":
			from, err = args.String(cmd, key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if to == "" {
		return args.Missing(cmd, "to")
	}
	if from != "" && !filepath.IsAbs(from) {
		return mongoerr.New(mongoerr.BadValue, "incrementalFrom must be an absolute path, not %q", from)
	}
	switch {
	case h.Storage.Cluster != nil:
		res, err = h.backupClusterRun(ctx, r, filepath.Clean(to), from) // backup_cluster.go
	default:
		res, err = backup.Run(ctx, backup.Options{Dir: filepath.Clean(to), Cat: h.Cat, Gate: &h.Backup, Tick: h.Clock.Tick,
			IncrementalFrom: from, ServerVersion: command.ServerVersion, Log: r.Conn.Log})
	}
	if err != nil {
		return err
	}
	r.OperationTime = res.ClusterTime
	r.Out = appendBackupResult(r.Out, to, res)
	return nil
}

// appendBackupResult appends the fields of backup's reply.
func appendBackupResult(dst []byte, dir string, res *backup.Result) []byte {
	m := &res.Manifest
	var docs int64
	for _, c := range m.Collections {
		docs += c.Count
	}
	dst = bsoncore.AppendStringElement(dst, "dir", dir)
	dst = bsoncore.AppendStringElement(dst, "manifest", filepath.Join(dir, store.ManifestName))
	dst = bsoncore.AppendTimestampElement(dst, "clusterTime", uint32(res.ClusterTime>>32), uint32(res.ClusterTime))
	dst = bsonx.AppendNumber(dst, "shards", int64(len(m.Shards)))
	dst = bsonx.AppendNumber(dst, "collections", int64(len(m.Collections)))
	dst = bsonx.AppendNumber(dst, "documents", docs)
	var files, reused, reusedBytes int64
	for _, s := range m.Shards {
		for _, f := range s.Files {
			files++
			if f.From != "" {
				reused++
				reusedBytes += f.Size
			}
		}
	}
	if m.IncrementalFrom != "" {
		dst = bsoncore.AppendStringElement(dst, "incrementalFrom", m.IncrementalFrom)
	}
	dst = bsonx.AppendNumber(dst, "files", files)
	dst = bsonx.AppendNumber(dst, "reusedFiles", reused)
	dst = bsonx.AppendNumber(dst, "reusedBytes", reusedBytes)
	dst = bsonx.AppendNumber(dst, "writePauseMicros", res.Pause.Microseconds())
	return bsonx.AppendNumber(dst, "durationMillis", res.Took.Milliseconds())
}
