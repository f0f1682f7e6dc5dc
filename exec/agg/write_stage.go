package agg

import (
	"context"
	"strings"

	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// WriteStage is $out or $merge: the last stage of a pipeline, which writes its input to a
// collection instead of returning it. aggregate runs such a pipeline to its end before it
// replies, with an empty first batch and no cursor (aggregateWrite).
type WriteStage interface {
	Stage
	// StageName is "$out" or "$merge".
	StageName() string
	// Prepare checks the target against the catalog before any document is read (MongoDB
	// resolves and checks it when it parses the pipeline, so explain checks it too).
	Prepare(run *WriteRun) error
	// Write drains in into the target.
	Write(ctx context.Context, run *WriteRun, in stream.Stream) error
}

// WriteRun is what one run of a write stage shares with aggregate: the server it writes
// through, the write concern's durability and the request units the writes cost.
type WriteRun struct {
	Host   Host
	Cat    *catalog.Catalog
	Sync   bool
	Bypass bool // the aggregate's bypassDocumentValidation
	Charge float64
}

// errWriteStageOpened is returned if a write stage is ever opened as an ordinary stage,
// which checkWriteStages prevents.
var errWriteStageOpened = mongoerr.New(mongoerr.InternalError, "a $out or $merge stage cannot be opened as a stream")

// PipelineWriter returns the pipeline's write stage (always its last stage), or nil.
func PipelineWriter(p *Pipeline) WriteStage {
	if len(p.Stages) == 0 {
		return nil
	}
	w, _ := p.Stages[len(p.Stages)-1].(WriteStage)
	return w
}

// writeTarget is the collection a write stage writes to.
type writeTarget struct {
	db, coll string
}

// ns returns "db.coll".
func (t writeTarget) ns() string { return t.db + "." + t.coll }

// internalDB reports whether db is one of the databases MongoDB keeps for itself.
func internalDB(db string) bool { return db == "admin" || db == "config" || db == "local" }

// valid reports whether t names a collection a write stage may create.
func (t writeTarget) valid() bool {
	return catalog.ValidateDBName(t.db) == nil && t.coll != "" && t.coll[0] != '.' && !strings.ContainsAny(t.coll, "$\x00")
}

// Spec returns {db, coll}, the normalized target explain shows.
func (t writeTarget) Spec() bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendStringElement(b, "db", t.db)
	b = bsoncore.AppendStringElement(b, "coll", t.coll)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

// withContext returns err with MongoDB's uassertStatusOKWithContext wording: the same code
// and extra fields, the message prefixed by prefix.
func withContext(err error, prefix string) error {
	me := mongoerr.As(err)
	if me == nil {
		return err
	}
	out := mongoerr.Wrap(err, me.Code, "%s :: caused by :: %s", prefix, me.Message)
	out.Info, out.Labels = me.Info, me.Labels
	return out
}
