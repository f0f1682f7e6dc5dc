package colls

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/changes"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/ddl"
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

// recordModify records, at slot, collMod body (plan p) of c, whose record before it was old, as MongoDB's
// oplog entry of collMod tells it: operationDescription is the command's fields but its name
// and the generic arguments, the index argument replaced by what changed of the index;
// stateBeforeChange holds the collection's options before it, and the index's old values.
func (h *Handlers) recordModify(slot *command.ChangeSlot, old *store.Collection, body bsoncore.Document, p *ddl.CollModPlan) {
	idxNow, idxBefore := p.IndexChange()
	desc := bsoncore.NewDocumentBuilder()
	elems, _ := body.Elements()
	for i, el := range elems {
		switch k := el.Key(); {
		case i == 0 || args.Generic[k]:
		case k == "index" && idxNow != nil:
			desc.AppendDocument(k, idxNow)
		default:
			desc.AppendValue(k, el.Value())
		}
	}
	opts := old.Options
	if opts == nil {
		opts = bsoncore.NewDocumentBuilder().Build()
	}
	before := bsoncore.NewDocumentBuilder().AppendDocument("collectionOptions", opts)
	if idxBefore != nil {
		before.AppendDocument("indexOptions", idxBefore)
	}
	slot.Record(&changes.DDL{Op: changes.OpModify, DB: old.DB, Coll: old.Name, UUID: old.UUID[:],
		Desc: desc.Build(), Before: before.Build()})
}
