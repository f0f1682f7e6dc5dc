package dump

import (
	"encoding/hex"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// Metadata is a collection's .metadata.json: mongodump's fields, in its order, and cleave's
// shardKey.
type Metadata struct {
	Options        bson.D   `bson:"options,omitempty"`
	Indexes        []bson.D `bson:"indexes"`
	UUID           string   `bson:"uuid,omitempty"`
	CollectionName string   `bson:"collectionName"`
	Type           string   `bson:"type,omitempty"`
	ShardKey       bson.D   `bson:"shardKey,omitempty"` // cleave's: the shardCollection key
}

// MarshalJSON encodes m as mongodump does: canonical Extended JSON, HTML not escaped.
func (m *Metadata) MarshalJSON() ([]byte, error) {
	if m.Indexes == nil {
		m.Indexes = []bson.D{} // mongorestore's legacy readers want [], not null
	}
	return bson.MarshalExtJSON(m, true, false)
}

// parseMetadata decodes a .metadata.json; an empty file is a collection without options or
// indexes, as mongorestore reads it.
func parseMetadata(data []byte, what string) (Metadata, error) {
	var m Metadata
	if len(data) == 0 {
		return m, nil
	}
	if err := bson.UnmarshalExtJSON(data, false, &m); err != nil {
		return m, fmt.Errorf("%s: not mongodump metadata: %w", what, err)
	}
	return m, nil
}

// uuidString is a collection UUID as mongodump writes it: hex without dashes.
func uuidString(spec bson.Raw) string {
	v, err := spec.LookupErr("info", "uuid")
	if err != nil {
		return ""
	}
	sub, data, ok := v.BinaryOK()
	if !ok || sub != bson.TypeBinaryUUID {
		return ""
	}
	return hex.EncodeToString(data)
}

// indexesToCreate are the specs of m's indexes that createIndexes takes: without _id's,
// which every collection has, and without the ns field old servers listed.
func (m *Metadata) indexesToCreate() []bson.D {
	var out []bson.D
	for _, ix := range m.Indexes {
		var spec bson.D
		isID := false
		for _, e := range ix {
			switch e.Key {
			case "ns":
				continue
			case "name":
				isID = e.Value == "_id_"
			}
			spec = append(spec, e)
		}
		if !isID {
			out = append(out, spec)
		}
	}
	return out
}
