package colls

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/store"
)

// The DDL events change streams report with showExpandedEvents (create, createIndexes,
// dropIndexes, modify), recorded once the operation committed (command.Server.RecordChange),
// with MongoDB's operationDescription.

// recordIndexes records op (createIndexes, dropIndexes) of the indexes named on c.
func (h *Handlers) recordIndexes(op string, c *store.Collection, names []string) {
	if c == nil || len(names) == 0 {
		return
	}
	aidx, arr := bsoncore.AppendArrayStart(nil)
	n := 0
	for i := range c.Indexes {
		for _, name := range names {
			if c.Indexes[i].Name == name {
				arr = bsoncore.AppendDocumentElement(arr, strconv.Itoa(n), catalog.IndexSpecDoc(&c.Indexes[i]))
				n++
			}
		}
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, aidx)
	desc := bsoncore.NewDocumentBuilder().AppendArray("indexes", arr).Build()
	h.RecordChange(&changes.DDL{Op: op, DB: c.DB, Coll: c.Name, UUID: c.UUID[:], Desc: desc})
}

// recordModify records a collMod of c.
func (h *Handlers) recordModify(c *store.Collection) {
	h.RecordChange(&changes.DDL{Op: changes.OpModify, DB: c.DB, Coll: c.Name, UUID: c.UUID[:],
		Desc: bsoncore.NewDocumentBuilder().Build()})
}
