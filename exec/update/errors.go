package update

import (
	"strconv"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// MongoDB codes that wire/mongoerr does not list yet. Their String() falls back to
// "Location<N>" until they are added there with their codeName.
const (
	codeCannotBackfillArray mongoerr.Code = 34    // CannotBackfillArray
	codeNotExactValueField  mongoerr.Code = 111   // NotExactValueField
	codeDocTooLargeUpdate   mongoerr.Code = 17419 // Location17419: resulting document too large
	codeDocTooLargeUpsert   mongoerr.Code = 17420 // Location17420: document to upsert too large
)

// Limits MongoDB enforces on stored documents.
const (
	maxUserDocSize  = 16 * 1024 * 1024 // BSONObjMaxUserSize
	maxStorageDepth = 180              // BSONDepth::getMaxDepthForUserStorage()
	maxPadding      = 1500000          // pathsupport::kMaxPaddingAllowed
)

// errf returns a *mongoerr.Error; a thin alias that keeps call sites short.
func errf(code mongoerr.Code, format string, args ...any) *mongoerr.Error {
	return mongoerr.New(code, format, args...)
}

// errInvalidBSON reports a malformed document or update.
func errInvalidBSON(what string) *mongoerr.Error {
	return errf(mongoerr.InvalidBSON, "invalid BSON in %s", what)
}

// errPositionalNoMatch is MongoDB's error for a positional update whose query did not match
// an array element.
func errPositionalNoMatch() *mongoerr.Error {
	return errf(mongoerr.BadValue, "The positional operator did not find the match needed from the query.")
}

// errDepth is MongoDB's error for a document nested deeper than storage allows.
func errDepth() *mongoerr.Error {
	return errf(mongoerr.Overflow, "Document exceeds maximum nesting depth of %d", maxStorageDepth)
}

// typeName returns MongoDB's name of a BSON type (typeName() in bsontypes.cpp).
func typeName(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeDouble:
		return "double"
	case bsoncore.TypeString:
		return "string"
	case bsoncore.TypeEmbeddedDocument:
		return "object"
	case bsoncore.TypeArray:
		return "array"
	case bsoncore.TypeBinary:
		return "binData"
	case bsoncore.TypeUndefined:
		return "undefined"
	case bsoncore.TypeObjectID:
		return "objectId"
	case bsoncore.TypeBoolean:
		return "bool"
	case bsoncore.TypeDateTime:
		return "date"
	case bsoncore.TypeNull:
		return "null"
	case bsoncore.TypeRegex:
		return "regex"
	case bsoncore.TypeDBPointer:
		return "dbPointer"
	case bsoncore.TypeJavaScript:
		return "javascript"
	case bsoncore.TypeSymbol:
		return "symbol"
	case bsoncore.TypeCodeWithScope:
		return "javascriptWithScope"
	case bsoncore.TypeInt32:
		return "int"
	case bsoncore.TypeTimestamp:
		return "timestamp"
	case bsoncore.TypeInt64:
		return "long"
	case bsoncore.TypeDecimal128:
		return "decimal"
	case bsoncore.TypeMinKey:
		return "minKey"
	case bsoncore.TypeMaxKey:
		return "maxKey"
	case 0:
		return "missing"
	}
	return "invalid type " + strconv.Itoa(int(t))
}
