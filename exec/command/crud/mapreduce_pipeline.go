package crud

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// pipeline translates the command into the aggregation MongoDB 4.4+ runs for it
// (map_reduce_common::translateFromMR), with $function where MongoDB has its internal
// $_internalJsEmit and $_internalJsReduce:
//
//	$match query, $sort sort, $limit limit
//	$project {_id: 0, emits: $function(map wrapped with emit)}  // [{k, v}, ...] per document
//	$unwind $emits
//	$group {_id: $emits.k, vs: {$push: $emits.v}}
//	$project {value: $function(reduce(_id, vs))}               // reduce sees every value of a key
//	$project {value: $function(finalize(_id, value))}          // with finalize
//	$sort {_id: 1}, or $out / $merge for a collection
//
// The scope's variables are globals of map, reduce and finalize (a with block around them).
// NB: the $group runs after the shards' streams merge ($push keeps the order of emits), so
// reduce is called once per key, not once per shard and again to merge: a reduce written
// for MongoDB (idempotent, re-reducible) gives the same result.
func (a *mapReduceArgs) pipeline(db string) (bsoncore.Array, error) {
	var stages [][]byte
	if a.query != nil {
		stages = append(stages, mrStage("$match", mrDoc(a.query)))
	}
	if a.sort != nil {
		if len(a.sort) <= 5 {
			return nil, mongoerr.New(mongoerr.Location15976, "The mapReduce sort option must have at least one sort key")
		}
		stages = append(stages, mrStage("$sort", mrDoc(a.sort)))
	}
	if a.hasLimit {
		if a.limit <= 0 {
			return nil, mongoerr.New(mongoerr.Location15958, "The limit specified to mapReduce must be positive")
		}
		stages = append(stages, mrStage("$limit", bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, a.limit)}))
	}
	scope := a.scope
	if scope == nil {
		scope = bsoncore.Document{5, 0, 0, 0, 0}
	}
	lit := func() []byte {
		return bsoncore.BuildDocument(nil, bsoncore.AppendDocumentElement(nil, "$literal", scope))
	}
	emitBody := "function(__doc, __scope) {\n  var __emits = [];\n  var emit = function(k, v) { __emits.push({k: k, v: v}); };\n" +
		"  with (__scope) { (" + a.mapFn + "\n).call(__doc); }\n  return __emits;\n}"
	mapArgs := mrArray(mrString("$$ROOT"), mrDoc(lit()))
	stages = append(stages,
		mrStage("$project", mrDoc(mrFields("_id", mrInt32(0), "emits", mrFunction(emitBody, mapArgs)))),
		mrStage("$unwind", mrString("$emits")),
		mrStage("$group", mrDoc(mrFields("_id", mrString("$emits.k"), "vs", mrDoc(mrFields("$push", mrString("$emits.v")))))))
	stages = append(stages, a.reduceStage(mrArray(mrString("$_id"), mrString("$vs"), mrDoc(lit()))))
	if a.fin != "" {
		stages = append(stages, a.finalizeStage(lit()))
	}
	switch {
	case a.out.inline:
		stages = append(stages, mrStage("$sort", mrDoc(mrFields("_id", mrInt32(1)))))
	default:
		stages = append(stages, a.outStage(db, lit))
	}
	idx, arr := bsoncore.AppendArrayStart(nil)
	for i, s := range stages {
		arr = bsoncore.AppendDocumentElement(arr, strconv.Itoa(i), s)
	}
	arr, err := bsoncore.AppendArrayEnd(arr, idx)
	return arr, err
}

// reduceStage is {$project: {value: reduce(args...)}}.
func (a *mapReduceArgs) reduceStage(args bsoncore.Value) []byte {
	body := "function(__k, __vs, __scope) { with (__scope) { return (" + a.reduceFn + "\n)(__k, __vs); } }"
	return mrStage("$project", mrDoc(mrFields("value", mrFunction(body, args))))
}

// finalizeStage is {$project: {value: finalize(_id, value)}}.
func (a *mapReduceArgs) finalizeStage(scope []byte) []byte {
	body := "function(__k, __v, __scope) { with (__scope) { return (" + a.fin + "\n)(__k, __v); } }"
	return mrStage("$project", mrDoc(mrFields("value", mrFunction(body, mrArray(mrString("$_id"), mrString("$value"), mrDoc(scope))))))
}

// outStage is the write of the results: $out for replace, $merge replacing by _id for
// merge, and for reduce a $merge whose whenMatched reduces the existing value with the new
// one (and finalizes the result), as translateOutReduce.
func (a *mapReduceArgs) outStage(db string, lit func() []byte) []byte {
	if a.out.db != "" {
		db = a.out.db
	}
	into := mrDoc(mrFields("db", mrString(db), "coll", mrString(a.out.coll)))
	switch a.out.mode {
	case "merge":
		return mrStage("$merge", mrDoc(mrFields("into", into, "on", mrString("_id"), "whenMatched", mrString("replace"), "whenNotMatched", mrString("insert"))))
	case "reduce":
		vals := mrArray(mrString("$value"), mrString("$$new.value"))
		whenMatched := [][]byte{a.reduceStage(mrArray(mrString("$_id"), vals, mrDoc(lit())))}
		if a.fin != "" {
			whenMatched = append(whenMatched, a.finalizeStage(lit()))
		}
		idx, arr := bsoncore.AppendArrayStart(nil)
		for i, s := range whenMatched {
			arr = bsoncore.AppendDocumentElement(arr, strconv.Itoa(i), s)
		}
		arr, _ = bsoncore.AppendArrayEnd(arr, idx)
		pipe := bsoncore.Value{Type: bsoncore.TypeArray, Data: arr}
		return mrStage("$merge", mrDoc(mrFields("into", into, "on", mrString("_id"), "whenMatched", pipe, "whenNotMatched", mrString("insert"))))
	}
	return mrStage("$out", into)
}

// mrFunction is {$function: {body, args, lang: "js"}}.
func mrFunction(body string, args bsoncore.Value) bsoncore.Value {
	return mrDoc(mrFields("$function", mrDoc(mrFields("body", mrString(body), "args", args, "lang", mrString("js")))))
}

// mrStage is {name: arg}.
func mrStage(name string, arg bsoncore.Value) []byte { return mrFields(name, arg) }

// mrFields builds a document of name, value pairs.
func mrFields(kv ...any) []byte {
	idx, d := bsoncore.AppendDocumentStart(nil)
	for i := 0; i+1 < len(kv); i += 2 {
		d = bsoncore.AppendValueElement(d, kv[i].(string), kv[i+1].(bsoncore.Value))
	}
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	return d
}

// mrArray builds an array value.
func mrArray(vals ...bsoncore.Value) bsoncore.Value {
	idx, arr := bsoncore.AppendArrayStart(nil)
	for i, v := range vals {
		arr = bsoncore.AppendValueElement(arr, strconv.Itoa(i), v)
	}
	arr, _ = bsoncore.AppendArrayEnd(arr, idx)
	return bsoncore.Value{Type: bsoncore.TypeArray, Data: arr}
}

// mrDoc wraps a document as a value.
func mrDoc(d []byte) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
}

// mrString is a string value.
func mrString(s string) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
}

// mrInt32 is an int32 value.
func mrInt32(n int32) bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, n)}
}
