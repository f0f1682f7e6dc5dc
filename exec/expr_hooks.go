package exec

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// exprPredicate compiles $expr for the matcher; nil until the expression evaluator is wired
// in, which makes $expr fail with QueryFeatureNotAllowed.
var exprPredicate func(expr bsoncore.Value) (func(doc bsoncore.Document) (bool, error), error)

// exprValue compiles aggregation expressions used as projection values; nil until the
// expression evaluator is wired in.
var exprValue func(bsoncore.Value) (func(doc bsoncore.Document) (bsoncore.Value, error), error)
