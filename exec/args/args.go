// Package args parses command arguments as MongoDB's IDL does: typed accessors that answer
// MongoDB's TypeMismatch for a wrong type (args.String, Doc, Array, Bool, Int64), the error
// for a missing required field, and ForEach, which walks a command body and refuses unknown
// fields but passes the generic ones every command accepts (lsid, $db, comment…).
package args

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Generic are the fields every command accepts and handles generically (or ignores, as a
// standalone mongos does for the ones that only matter to replication or auditing).
var Generic = map[string]bool{
	"$db": true, "lsid": true, "$clusterTime": true, "$readPreference": true,
	"readConcern": true, "writeConcern": true, "apiVersion": true, "apiStrict": true,
	"apiDeprecationErrors": true, "comment": true, "maxTimeMS": true, "txnNumber": true,
	"autocommit": true, "startTransaction": true, "$audit": true, "$client": true,
	"$configServerState": true, "mayBypassWriteBlocking": true, "$queryOptions": true,
	"$readConcern": true, "$signature": true, "databaseVersion": true, "shardVersion": true,
	"clientOperationKey": true, "$traceCtx": true, "help": true, "rawData": true,
	"usesDefaultMaxTimeMS": true,
	// cleave's own: the request's priority (Cosmos DB's priority-based execution).
	"priorityLevel": true,
}

// argKeys maps the generic arguments and the names of the arguments the common commands
// take to their interned names, so that ForEach tells the generic ones apart and passes the
// others to fn with one lookup per field and no string made per field of every command.
var argKeys = func() map[string]argKey {
	m := map[string]argKey{}
	for n := range Generic {
		m[n] = argKey{name: n, generic: true}
	}
	for _, n := range []string{
		"filter", "sort", "projection", "hint", "skip", "limit", "batchSize", "singleBatch",
		"let", "collation", "allowDiskUse", "noCursorTimeout", "returnKey", "showRecordId",
		"min", "max", "tailable", "awaitData", "allowPartialResults", "readOnce",
		"documents", "ordered", "bypassDocumentValidation", "updates", "deletes",
		"pipeline", "cursor", "explain", "collection", "query", "update", "remove", "new",
		"fields", "upsert", "arrayFilters", "key", "cursors", "term", "lastKnownCommittedOpTime",
	} {
		m[n] = argKey{name: n}
	}
	return m
}()

// argKey is an entry of argKeys.
type argKey struct {
	name    string
	generic bool
}

// ForEach calls fn for every field of a command body except the command name itself (the
// first field) and the generic arguments. fn returns false for a field it does not know,
// which fails with MongoDB's IDL error 40415 "BSON field '<cmd>.<field>' is an unknown field.".
// An optional field set to null or undefined is skipped as absent (NullAbsent).
func ForEach(cmd string, body bsoncore.Document, fn func(key string, v bsoncore.Value) (bool, error)) error {
	_, err := ForEachMaxTime(cmd, body, fn)
	return err
}

// ForEachMaxTime is ForEach that also returns the generic maxTimeMS argument (its first
// occurrence, as body.Lookup finds it; Type 0 when absent), in the same pass over the body.
func ForEachMaxTime(cmd string, body bsoncore.Document, fn func(key string, v bsoncore.Value) (bool, error)) (bsoncore.Value, error) {
	var maxTime bsoncore.Value
	it := bsonx.Elements(body)
	if _, ok := it.Next(); !ok { // the command name
		return maxTime, nil
	}
	for {
		el, ok := it.Next()
		if !ok {
			return maxTime, nil
		}
		kb := el.KeyBytes()
		ak, interned := argKeys[string(kb)] // NB: a lookup by string(bytes) does not allocate
		if ak.generic {
			if maxTime.Type == 0 && ak.name == "maxTimeMS" {
				maxTime = el.Value()
			}
			continue
		}
		key := ak.name
		if !interned {
			key = string(kb)
		}
		if NullAbsent(cmd, key, el.Value()) {
			continue // null.go: MongoDB's IDL takes a null optional field for an absent one
		}
		known, err := fn(key, el.Value())
		if err != nil {
			return maxTime, err
		}
		if !known {
			return maxTime, mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", cmd, key)
		}
	}
}

// Missing is MongoDB's IDL error for an absent required field.
func Missing(cmd, field string) error {
	return mongoerr.New(mongoerr.Location40414, "BSON field '%s.%s' is missing but a required field", cmd, field)
}

// WrongType is MongoDB's IDL error for a field of the wrong BSON type.
func WrongType(cmd, field string, got bsoncore.Type, want ...string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', %s",
		cmd, field, bsonx.TypeName(got), Expected(want...))
}

// Expected is the end of MongoDB 7.0's IDL type error, which names one type in quotes and
// a list of them with the closing quote inside the bracket (IDLParserContext::throwBadType
// writes "'[" … "']"; MongoDB 8 moved the quote out):
//
//	Expected("object")                           → expected type 'object'
//	Expected("long", "int", "decimal", "double") → expected types '[long, int, decimal, double']
func Expected(want ...string) string {
	if len(want) == 1 {
		return "expected type '" + want[0] + "'"
	}
	return "expected types '[" + strings.Join(want, ", ") + "']"
}

// NumberTypes are the types MongoDB's IDL "safeInt64" and friends accept, in its message order.
var NumberTypes = []string{"long", "int", "decimal", "double"}

// String returns a string argument.
func String(cmd, field string, v bsoncore.Value) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", WrongType(cmd, field, v.Type, "string")
	}
	return s, nil
}

// Doc returns a document argument.
func Doc(cmd, field string, v bsoncore.Value) (bsoncore.Document, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, WrongType(cmd, field, v.Type, "object")
	}
	return d, nil
}

// Array returns an array argument.
func Array(cmd, field string, v bsoncore.Value) (bsoncore.Array, error) {
	a, ok := v.ArrayOK()
	if !ok {
		return nil, WrongType(cmd, field, v.Type, "array")
	}
	return a, nil
}

// Bool returns a boolean argument; like MongoDB's "safeBool", numbers count as booleans.
func Bool(cmd, field string, v bsoncore.Value) (bool, error) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean(), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := bsonx.NumberAsFloat64(v)
		return f != 0, nil
	case bsoncore.TypeNull, bsoncore.TypeUndefined:
		return false, nil
	default:
		return false, WrongType(cmd, field, v.Type, "bool")
	}
}

// OptionalBool returns a boolean argument of MongoDB's IDL type "optionalBool" (find's
// singleBatch, allowDiskUse, noCursorTimeout…), which takes a boolean and nothing else.
func OptionalBool(field string, v bsoncore.Value) (bool, error) {
	if v.Type != bsoncore.TypeBoolean {
		return false, mongoerr.New(mongoerr.TypeMismatch, "Field '%s' should be a boolean value, but found: %s", field, bsonx.TypeName(v.Type))
	}
	return v.Boolean(), nil
}

// Int64 returns an integral numeric argument (MongoDB's "safeInt64": whole doubles and
// decimals are accepted, fractions are truncated as MongoDB does).
func Int64(cmd, field string, v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), nil
	case bsoncore.TypeInt64:
		return v.Int64(), nil
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := bsonx.NumberAsFloat64(v)
		if math.IsNaN(f) {
			return 0, mongoerr.New(mongoerr.BadValue, "BSON field '%s.%s' value must be a number, got NaN", cmd, field)
		}
		if f >= math.MaxInt64 {
			return math.MaxInt64, nil
		}
		if f <= math.MinInt64 {
			return math.MinInt64, nil
		}
		return int64(f), nil
	default:
		return 0, WrongType(cmd, field, v.Type, NumberTypes...)
	}
}

// Collection validates the collection name given as the command's first field. The commands
// that also take a collection UUID there (find, count, distinct) check the element's type in
// their authorization check, before they parse it, and refuse anything but a string as
// AuthorizationSession::isAuthorizedToParseNamespaceElement does; the others say what type
// they got:
//
//	{find: 1}   → Failed to parse namespace element
//	{insert: 1} → collection name has invalid type int
func Collection(cmd string, v bsoncore.Value) (string, error) {
	s, ok := v.StringValueOK()
	if !ok && uuidCommands[cmd] {
		return "", mongoerr.New(mongoerr.InvalidNamespace, "Failed to parse namespace element")
	}
	if !ok {
		return "", mongoerr.New(mongoerr.InvalidNamespace,
			"collection name has invalid type %s", bsonx.TypeName(v.Type))
	}
	if s == "" {
		return "", mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", s)
	}
	return s, nil
}

// uuidCommands are the commands whose namespace element may be a collection UUID.
var uuidCommands = map[string]bool{"find": true, "count": true, "distinct": true}

// OptionalDoc returns a document argument; null counts as absent, as drivers sometimes send it.
func OptionalDoc(cmd, field string, v bsoncore.Value) (bsoncore.Document, error) {
	if v.Type == bsoncore.TypeNull {
		return nil, nil
	}
	return Doc(cmd, field, v)
}

// Enum is MongoDB's IDL check of an enumeration value.
func Enum(cmd, key, s string, allowed ...string) error {
	for _, a := range allowed {
		if s == a {
			return nil
		}
	}
	return mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '%s.%s' is not a valid value.", s, cmd, key)
}
