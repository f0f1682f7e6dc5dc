package write

import (
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/update"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Helpers the commands that write share: how a statement's update compiles, and how many
// documents an insert groups.

// UpdateOptions are the compile options of update u: its array filters and, for a
// pipeline update (an array), the let variables and constants its expressions see, and fn,
// which runs their $function (nil: none, as without a script engine).
func UpdateOptions(u bsoncore.Value, arrayFilters []bsoncore.Document, let, constants bsoncore.Document, fn expr.FunctionHook) *update.Options {
	opts := &update.Options{ArrayFilters: arrayFilters}
	if u.Type == bsoncore.TypeArray { // the others compile no pipeline: spare the closure
		opts.CompilePipeline = PipelineCompilerJS(let, constants, fn)
	}
	return opts
}

// InsertGroupDocs and InsertGroupBytes bound a group of inserted documents that share one
// batch, one set of key locks and one synced commit.
const (
	InsertGroupDocs  = 512
	InsertGroupBytes = 4 << 20
)
