package store

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Catalog records are BSON documents, so that fields can be added without a format change:
// decoders ignore fields they do not know and leave missing ones at their zero value.

// encodeDatabase encodes a database record.
func encodeDatabase(d *Database) []byte {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = bsoncore.AppendStringElement(doc, "name", d.Name)
	if d.Options != nil {
		doc = bsoncore.AppendDocumentElement(doc, "options", d.Options)
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc
}

// decodeDatabase decodes a database record.
func decodeDatabase(raw []byte) (*Database, error) {
	d := &Database{}
	err := eachElement(raw, func(key string, v bsoncore.Value) bool {
		switch key {
		case "name":
			d.Name, _ = v.StringValueOK()
		case "options":
			d.Options = docValue(v)
		}
		return true
	})
	if err == nil && d.Name == "" {
		err = fmt.Errorf("%w: database record without name", ErrCorrupt)
	}
	return d, err
}

// encodeCollection encodes a collection record.
func encodeCollection(c *Collection) []byte {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	doc = bsoncore.AppendInt64Element(doc, "id", int64(c.ID))
	doc = bsoncore.AppendStringElement(doc, "db", c.DB)
	doc = bsoncore.AppendStringElement(doc, "name", c.Name)
	doc = bsoncore.AppendBinaryElement(doc, "uuid", 4, c.UUID[:])
	doc = bsoncore.AppendDateTimeElement(doc, "createdAt", c.CreatedAt.UnixMilli())
	if c.Options != nil {
		doc = bsoncore.AppendDocumentElement(doc, "options", c.Options)
	}
	if c.ShardKey != nil {
		doc = bsoncore.AppendDocumentElement(doc, "shardKey", c.ShardKey)
	}
	doc = appendPlacement(doc, c)
	doc = bsoncore.AppendInt64Element(doc, "throughput", c.Throughput)
	if c.Autoscale {
		doc = bsoncore.AppendBooleanElement(doc, "autoscale", true) // absent in older records: false
	}
	if c.BurstCapacity != ToggleDefault {
		doc = bsoncore.AppendBooleanElement(doc, "burstCapacity", c.BurstCapacity == ToggleOn)
	}
	if c.CustomBudgets {
		doc = bsoncore.AppendBooleanElement(doc, "customBudgets", true)
	}
	if c.NoBalance {
		doc = bsoncore.AppendBooleanElement(doc, "noBalance", true) // absent in older records: false
	}
	if c.NoMigrations {
		doc = bsoncore.AppendBooleanElement(doc, "noMigrations", true)
	}
	if c.ReshardNode != "" {
		doc = bsoncore.AppendStringElement(doc, "reshardNode", c.ReshardNode)
		doc = bsoncore.AppendStringElement(doc, "reshardOf", c.ReshardOf)
	}
	if c.ChunkSizeBytes > 0 {
		doc = bsoncore.AppendInt64Element(doc, "chunkSizeBytes", c.ChunkSizeBytes) // absent in older records: the server's
	}
	if c.NoAutoMerge {
		doc = bsoncore.AppendBooleanElement(doc, "noAutoMerge", true)
	}
	if c.ThrottleRetryMS != 0 {
		doc = bsoncore.AppendInt64Element(doc, "throttleRetryMS", c.ThrottleRetryMS)
	}
	if c.SharedRU > 0 {
		doc = bsoncore.AppendDoubleElement(doc, "sharedRU", c.SharedRU)
	}
	doc = appendDocArray(doc, "searchIndexes", c.SearchIndexes)
	doc = appendIndexes(doc, c.Indexes)
	aidx, doc := bsoncore.AppendArrayElementStart(doc, "partitions")
	for i, p := range c.Partitions {
		var pi int32
		pi, doc = bsoncore.AppendDocumentElementStart(doc, strconv.Itoa(i))
		doc = bsoncore.AppendInt64Element(doc, "id", int64(p.ID))
		doc = bsoncore.AppendInt64Element(doc, "lo", int64(p.Lo)) // the bits of the uint64
		doc = bsoncore.AppendInt64Element(doc, "shard", int64(p.Shard))
		if p.BudgetRU > 0 {
			doc = bsoncore.AppendDoubleElement(doc, "budgetRU", p.BudgetRU)
		}
		doc, _ = bsoncore.AppendDocumentEnd(doc, pi)
	}
	doc, _ = bsoncore.AppendArrayEnd(doc, aidx)
	doc = bsoncore.AppendInt64Element(doc, "nextIndexId", int64(c.NextIndexID))
	doc = bsoncore.AppendInt64Element(doc, "nextPartitionId", int64(c.NextPartitionID))
	doc = bsoncore.AppendInt64Element(doc, "version", int64(c.Version))
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	return doc
}

// appendIndexes appends a collection's indexes as the array "indexes".
func appendIndexes(doc []byte, indexes []Index) []byte {
	aidx, doc := bsoncore.AppendArrayElementStart(doc, "indexes")
	for i, x := range indexes {
		var xi int32
		xi, doc = bsoncore.AppendDocumentElementStart(doc, strconv.Itoa(i))
		doc = bsoncore.AppendInt64Element(doc, "id", int64(x.ID))
		doc = bsoncore.AppendStringElement(doc, "name", x.Name)
		doc = bsoncore.AppendDocumentElement(doc, "key", x.Key)
		if x.Spec != nil {
			doc = bsoncore.AppendDocumentElement(doc, "spec", x.Spec)
		}
		doc = bsoncore.AppendBooleanElement(doc, "ready", x.Ready)
		if x.Builder != "" && !x.Ready {
			doc = bsoncore.AppendStringElement(doc, "builder", x.Builder)
		}
		if !x.MultikeyUnknown {
			var mi int32
			mi, doc = bsoncore.AppendArrayElementStart(doc, "multikeyPaths")
			for j, p := range x.MultikeyPaths {
				doc = bsoncore.AppendStringElement(doc, strconv.Itoa(j), p)
			}
			doc, _ = bsoncore.AppendArrayEnd(doc, mi)
		}
		doc, _ = bsoncore.AppendDocumentEnd(doc, xi)
	}
	doc, _ = bsoncore.AppendArrayEnd(doc, aidx)
	return doc
}

// appendPlacement appends the fields that refine where c's documents go: placeFields and
// zones, each only when set (older records have neither).
func appendPlacement(doc []byte, c *Collection) []byte {
	if c.PlaceFields > 0 {
		doc = bsoncore.AppendInt64Element(doc, "placeFields", int64(c.PlaceFields))
	}
	return appendDocArray(doc, "zones", c.Zones)
}

// appendDocArray appends docs as an array field key, unless docs is nil.
func appendDocArray(doc []byte, key string, docs []bsoncore.Document) []byte {
	if docs == nil {
		return doc
	}
	idx, doc := bsoncore.AppendArrayElementStart(doc, key)
	for i, x := range docs {
		doc = bsoncore.AppendDocumentElement(doc, strconv.Itoa(i), x)
	}
	doc, _ = bsoncore.AppendArrayEnd(doc, idx)
	return doc
}

// decodeCollection decodes a collection record.
func decodeCollection(raw []byte) (*Collection, error) {
	c := &Collection{}
	var err error
	walkErr := eachElement(raw, func(key string, v bsoncore.Value) bool {
		switch key {
		case "id":
			c.ID = CollID(int64Value(v))
		case "db":
			c.DB, _ = v.StringValueOK()
		case "name":
			c.Name, _ = v.StringValueOK()
		case "uuid":
			if _, data, ok := v.BinaryOK(); ok && len(data) == 16 {
				copy(c.UUID[:], data)
			}
		case "createdAt":
			if ms, ok := v.DateTimeOK(); ok {
				c.CreatedAt = time.UnixMilli(ms).UTC()
			}
		case "options":
			c.Options = docValue(v)
		case "shardKey":
			c.ShardKey = docValue(v)
		case "throughput":
			c.Throughput = int64Value(v)
		case "placeFields":
			c.PlaceFields = int(int64Value(v))
		case "zones":
			err = eachArrayDoc(v, func(d bsoncore.Document) error {
				c.Zones = append(c.Zones, slices.Clone(d))
				return nil
			})
		case "searchIndexes":
			err = eachArrayDoc(v, func(d bsoncore.Document) error {
				c.SearchIndexes = append(c.SearchIndexes, slices.Clone(d))
				return nil
			})
		case "indexes":
			c.Indexes, err = decodeIndexes(v)
		case "partitions":
			c.Partitions, err = decodePartitions(v)
		case "nextIndexId":
			c.NextIndexID = IndexID(int64Value(v))
		case "nextPartitionId":
			c.NextPartitionID = uint64(int64Value(v))
		case "version":
			c.Version = uint64(int64Value(v))
		default:
			decodeCollectionSetting(c, key, v)
		}
		return err == nil
	})
	if walkErr != nil {
		return nil, walkErr
	}
	if err != nil {
		return nil, err
	}
	if err := c.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return c, nil
}

// decodeCollectionSetting decodes field key of a collection record among its throughput,
// balancing and layout-change settings; it ignores a field it does not know.
func decodeCollectionSetting(c *Collection, key string, v bsoncore.Value) {
	switch key {
	case "autoscale":
		c.Autoscale, _ = v.BooleanOK()
	case "burstCapacity":
		c.BurstCapacity = ToggleOff
		if on, _ := v.BooleanOK(); on {
			c.BurstCapacity = ToggleOn
		}
	case "customBudgets":
		c.CustomBudgets, _ = v.BooleanOK()
	case "noBalance":
		c.NoBalance, _ = v.BooleanOK()
	case "noMigrations":
		c.NoMigrations, _ = v.BooleanOK()
	case "reshardNode":
		c.ReshardNode, _ = v.StringValueOK()
	case "reshardOf":
		c.ReshardOf, _ = v.StringValueOK()
	case "chunkSizeBytes":
		c.ChunkSizeBytes = int64Value(v)
	case "noAutoMerge":
		c.NoAutoMerge, _ = v.BooleanOK()
	case "throttleRetryMS":
		c.ThrottleRetryMS = int64Value(v)
	case "sharedRU":
		c.SharedRU, _ = v.DoubleOK()
	}
}

// decodeIndexes decodes the indexes array of a collection record.
func decodeIndexes(v bsoncore.Value) ([]Index, error) {
	var out []Index
	err := eachArrayDoc(v, func(doc bsoncore.Document) error {
		var x Index
		x.MultikeyUnknown = true // until the record shows its multikeyPaths
		err := eachElement(doc, func(key string, v bsoncore.Value) bool {
			switch key {
			case "id":
				x.ID = IndexID(int64Value(v))
			case "name":
				x.Name, _ = v.StringValueOK()
			case "key":
				x.Key = docValue(v)
			case "spec":
				x.Spec = docValue(v)
			case "ready":
				x.Ready, _ = v.BooleanOK()
			case "builder":
				x.Builder, _ = v.StringValueOK()
			case "multikeyPaths":
				x.MultikeyUnknown = false
				arr, _ := v.ArrayOK()
				vals, _ := arr.Values()
				for _, p := range vals {
					if s, ok := p.StringValueOK(); ok {
						x.MultikeyPaths = append(x.MultikeyPaths, s)
					}
				}
			}
			return true
		})
		if err == nil && x.Key == nil {
			return fmt.Errorf("%w: catalog record: index %q has no key", ErrCorrupt, x.Name)
		}
		out = append(out, x)
		return err
	})
	return out, err
}

// decodePartitions decodes the partitions array of a collection record.
func decodePartitions(v bsoncore.Value) ([]Partition, error) {
	var out []Partition
	err := eachArrayDoc(v, func(doc bsoncore.Document) error {
		var p Partition
		err := eachElement(doc, func(key string, v bsoncore.Value) bool {
			switch key {
			case "id":
				p.ID = uint64(int64Value(v))
			case "lo":
				p.Lo = uint64(int64Value(v))
			case "shard":
				p.Shard = int(int64Value(v))
			case "budgetRU":
				p.BudgetRU, _ = v.DoubleOK()
			}
			return true
		})
		out = append(out, p)
		return err
	})
	return out, err
}

// eachElement validates raw as a document and calls fn for each element until it returns
// false.
func eachElement(raw []byte, fn func(key string, v bsoncore.Value) bool) error {
	doc := bsoncore.Document(raw)
	if err := doc.Validate(); err != nil {
		return fmt.Errorf("%w: catalog record: %w", ErrCorrupt, err)
	}
	elems, err := doc.Elements()
	if err != nil {
		return fmt.Errorf("%w: catalog record: %w", ErrCorrupt, err)
	}
	for _, e := range elems {
		if !fn(e.Key(), e.Value()) {
			break
		}
	}
	return nil
}

// eachArrayDoc calls fn for each element of array value v, which must all be documents.
func eachArrayDoc(v bsoncore.Value, fn func(bsoncore.Document) error) error {
	arr, ok := v.ArrayOK()
	if !ok {
		return fmt.Errorf("%w: catalog record: %s is not an array", ErrCorrupt, v.Type)
	}
	vals, err := arr.Values()
	if err != nil {
		return fmt.Errorf("%w: catalog record: %w", ErrCorrupt, err)
	}
	for _, ev := range vals {
		doc, ok := ev.DocumentOK()
		if !ok {
			return fmt.Errorf("%w: catalog record: array element is %s, not a document", ErrCorrupt, ev.Type)
		}
		if err := fn(doc); err != nil {
			return err
		}
	}
	return nil
}

// docValue returns a copy of v's document, or nil if v is not a document. Copies keep records
// independent of the iterator buffers they were read from.
func docValue(v bsoncore.Value) bsoncore.Document {
	doc, ok := v.DocumentOK()
	if !ok {
		return nil
	}
	return cloneDoc(doc)
}

// int64Value returns v as an int64 if it is an int32 or int64, else 0.
func int64Value(v bsoncore.Value) int64 {
	n, _ := v.AsInt64OK()
	return n
}
