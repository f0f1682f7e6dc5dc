package bsonx

import "errors"

// Sentinels for the ways a document can fail index-key or sort-key generation. The typed
// errors below match them with errors.Is and carry what MongoDB puts in its messages; exec maps
// them to MongoDB's codes.
var (
	// ErrParallelArrays: two fields of a compound index (or sort) reach different arrays
	// (MongoDB code 171 CannotIndexParallelArrays; for a sort, 2 BadValue).
	ErrParallelArrays = errors.New("cannot index parallel arrays")
	// ErrHashedArray: a hashed index meets an array (MongoDB code 16766).
	ErrHashedArray = errors.New("hashed indexes do not currently support array values")
	// ErrAmbiguousArrayField: a positional index path ("a.0") meets an array whose element is
	// a document with that numeric field name (MongoDB code 16746).
	ErrAmbiguousArrayField = errors.New("ambiguous field name found in array")
)

// ParallelArraysError reports the field names of the two arrays, in MongoDB's order: the array
// found second, then the one found first ("cannot index parallel arrays [b] [a]" for {a: 1,
// b: 1} and {a: [1], b: [2]}).
type ParallelArraysError struct {
	// First is the field of the array met second (the one printed first), Second that of
	// the array met first; Error prints them in this order.
	First, Second string
}

// Error returns MongoDB's message.
func (e *ParallelArraysError) Error() string {
	return "cannot index parallel arrays [" + e.First + "] [" + e.Second + "]"
}

// Is matches ErrParallelArrays.
func (e *ParallelArraysError) Is(target error) bool { return target == ErrParallelArrays }

// HashedArrayError reports the path prefix at which a hashed index met an array.
type HashedArrayError struct {
	Path string
}

// Error returns MongoDB's message.
func (e *HashedArrayError) Error() string {
	return "Error: hashed indexes do not currently support array values. Found array at path: " + e.Path
}

// Is matches ErrHashedArray.
func (e *HashedArrayError) Is(target error) bool { return target == ErrHashedArray }

// AmbiguousFieldError reports the positional path component that is also a field name of an
// array element.
type AmbiguousFieldError struct {
	Field string
}

// Error returns MongoDB's message, without the dump of the array MongoDB appends.
func (e *AmbiguousFieldError) Error() string {
	return "Ambiguous field name found in array (do not use numeric field names in embedded " +
		"elements in an array), field: '" + e.Field + "'"
}

// Is matches ErrAmbiguousArrayField.
func (e *AmbiguousFieldError) Is(target error) bool { return target == ErrAmbiguousArrayField }
