package cmd

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// genericArgs are the fields of a command body that the command path reads for every
// command, found in one pass over the body: eight lookups, each a walk of the whole body
// when the field is absent (the common case), were a tenth of a point read's CPU (issue 13).
// Each is the first field of its name, as body.Lookup finds it, kept as its offset in the
// body (0: absent), which a copy of the body shares.
type genericArgs struct {
	scanned bool
	// api: one of apiVersion, apiStrict or apiDeprecationErrors is present (api_version.go).
	api bool
	off [numGeneric]int32
}

// The fields genericArgs keeps.
const (
	genDB = iota
	genLSID
	genClusterTime
	genReadConcern
	genTxnNumber
	genAutocommit
	genStartTxn
	genSingleBatch // find's singleBatch (singleBatchFind)
	numGeneric
)

// generic returns field f (genDB…) of r's body, Type 0 when absent. The body is read once,
// at the first call.
func (r *request) generic(f int) bsoncore.Value {
	g := &r.gen
	if !g.scanned {
		g.scan(r.body)
	}
	if g.off[f] == 0 {
		return bsoncore.Value{}
	}
	el, _, _ := bsoncore.ReadElement(r.body[g.off[f]:])
	return el.Value()
}

// hasAPIParams reports whether r's body has one of the Stable API fields.
func (r *request) hasAPIParams() bool {
	if !r.gen.scanned {
		r.gen.scan(r.body)
	}
	return r.gen.api
}

// scan records the generic fields of body.
func (g *genericArgs) scan(body bsoncore.Document) {
	g.scanned = true
	if len(body) < 5 {
		return
	}
	pos := 4
	for rest := body[4 : len(body)-1]; len(rest) > 0; {
		el, next, ok := bsoncore.ReadElement(rest)
		if !ok {
			return
		}
		f := -1
		switch string(el.KeyBytes()) {
		case "$db":
			f = genDB
		case "lsid":
			f = genLSID
		case "$clusterTime":
			f = genClusterTime
		case "readConcern":
			f = genReadConcern
		case "txnNumber":
			f = genTxnNumber
		case "autocommit":
			f = genAutocommit
		case "startTransaction":
			f = genStartTxn
		case "singleBatch":
			f = genSingleBatch
		case "apiVersion", "apiStrict", "apiDeprecationErrors":
			g.api = true
		}
		if f >= 0 && g.off[f] == 0 {
			g.off[f] = int32(pos)
		}
		pos += len(el)
		rest = next
	}
}
