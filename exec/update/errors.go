package update

import (
	"github.com/cleavedb/cleave/wire/mongoerr"
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
