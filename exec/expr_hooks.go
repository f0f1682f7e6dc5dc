package exec

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
)

// exprPredicate compiles $expr for the matcher (find, count, distinct, update and delete
// filters). Aggregation compiles its own, with the pipeline's let variables.
var exprPredicate func(expr bsoncore.Value) (func(doc bsoncore.Document) (bool, error), error) = expr.CompilePredicate

// exprValue compiles aggregation expressions used as find projection values.
var exprValue func(bsoncore.Value) (func(doc bsoncore.Document) (bsoncore.Value, error), error) = expr.CompileValue
