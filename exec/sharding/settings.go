package sharding

import (
	"bytes"
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The documents of config.settings that hold cluster-wide settings (the balancer's switch,
// balancer.go; the default read and write concerns): on a single node, config.settings
// itself, a real collection whose writes are synced, so a restart keeps them; in cluster
// mode, the cluster's copy in etcd (Cluster.Setting), which every node mirrors into its own
// config.settings when it reads it.

// SharedSetting returns the settings document id as the cluster holds it (nil: none): this
// node's config.settings on a single node; in cluster mode etcd's, mirrored into this node's
// config.settings when it differs, or, when etcd cannot be read, the mirror.
func (m *Manager) SharedSetting(ctx context.Context, id string) (bsoncore.Document, error) {
	if m.life.Err() != nil {
		return nil, ErrShutdown // the stores may be closing: read none of them
	}
	c := m.mopts.Cluster
	if c == nil {
		return m.settingDoc(id)
	}
	ctx, cancel := context.WithTimeout(ctx, settingReadWait)
	defer cancel()
	raw, err := c.Setting(ctx, id)
	if err != nil && m.life.Err() != nil {
		return nil, ErrShutdown
	}
	if err != nil {
		m.log.Warn("cannot read a cluster setting: using this node's copy", zap.String("id", id), zap.Error(err))
		return m.settingDoc(id)
	}
	if raw == nil {
		return nil, nil
	}
	doc := bsoncore.Document(raw)
	if local, err := m.settingDoc(id); err == nil && !bytes.Equal(local, doc) {
		if err := m.putSettingDoc(doc); err != nil {
			m.log.Warn("cannot mirror a cluster setting", zap.String("id", id), zap.Error(err))
		}
	}
	return doc, nil
}

// PutSharedSetting replaces the settings document doc names by its _id for every node: in
// etcd in cluster mode, then in this node's config.settings.
func (m *Manager) PutSharedSetting(ctx context.Context, doc bsoncore.Document) error {
	if c := m.mopts.Cluster; c != nil {
		id, _ := doc.Lookup("_id").StringValueOK()
		ctx, cancel := context.WithTimeout(ctx, settingWriteWait)
		err := c.PutSetting(ctx, id, doc)
		cancel()
		if err != nil {
			return mongoerr.Wrap(err, mongoerr.HostUnreachable, "cannot write the setting %s to the cluster's metadata: %v", id, err)
		}
	}
	return m.putSettingDoc(doc)
}

// settingDoc returns config.settings' document id, or nil.
func (m *Manager) settingDoc(id string) (bsoncore.Document, error) {
	ci, err := m.cat.Lookup("config", "settings")
	if err != nil || ci == nil {
		return nil, err
	}
	return m.configDoc(ci, bsoncore.NewDocumentBuilder().AppendString("_id", id).Build()) // collection_balancing.go
}

// putSettingDoc replaces (or inserts) config.settings' document of doc's _id with doc, in
// one synced batch.
func (m *Manager) putSettingDoc(doc bsoncore.Document) error {
	ci, err := m.cat.ForWrite("config", "settings")
	if err != nil {
		return err
	}
	_, id := catalog.DocID(doc, nil)
	h, err := ci.ShardHash(doc)
	if err != nil {
		return err
	}
	w := write.DocWrite{Hash: h, ID: id, New: doc}
	wr := m.write.NewWriter(ci)
	wr.Lock(wr.LockHashes(nil, &w))
	defer wr.Release()
	sid, _ := doc.Lookup("_id").StringValueOK()
	if w.Old, err = m.settingDoc(sid); err != nil { // under the key lock: no writer changes it meanwhile
		return err
	}
	if err := wr.Stage(&w); err != nil {
		return err
	}
	return wr.Commit(true)
}
