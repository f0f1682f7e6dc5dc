package ddl

import (
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// validateCompoundProjection applies MongoDB 7.0's rules for the wildcardProjection of a
// compound wildcard index (wildcard_validation.cpp's validateWildcardProjection) to key
// pattern key and projection proj: no included path may hold a regular field (7246208), and
// when the projection excludes paths, every regular field must lie under one of them
// (7246209 where a later excluded path remains, 7246210 when they ran out). The fields are
// walked in path order, component by component, as MongoDB's FieldRef orders them.
func validateCompoundProjection(key, proj bsoncore.Document) error {
	var fields, included, excluded [][]string
	it := bsonx.Elements(key)
	for el, ok := it.Next(); ok; el, ok = it.Next() {
		if !catalog.IsWildcardPath(el.Key()) {
			fields = append(fields, strings.Split(el.Key(), "."))
		}
	}
	it = bsonx.Elements(proj)
	for el, ok := it.Next(); ok; el, ok = it.Next() {
		if incl, ok := projectionTrue(el.Value()); !ok {
			return nil // a computed or nested field: CompileWildcard answers it
		} else if incl {
			included = append(included, strings.Split(el.Key(), "."))
		} else {
			excluded = append(excluded, strings.Split(el.Key(), "."))
		}
	}
	for _, l := range [][][]string{fields, included, excluded} {
		slices.SortFunc(l, slices.Compare)
	}
	for i, j := 0, 0; i < len(fields) && j < len(included); {
		if isPathPrefix(included[j], fields[i]) {
			// NB: "ovverlapping" is MongoDB's spelling.
			return mongoerr.New(mongoerr.Location7246208, "Index Key and Wildcard Projection cannot contain overlapping fields, however '%s' index field is ovverlapping with '%s' wildcardProjection path.",
				strings.Join(fields[i], "."), strings.Join(included[j], "."))
		}
		if slices.Compare(included[j], fields[i]) < 0 {
			j++
		} else {
			i++
		}
	}
	if len(excluded) == 0 {
		return nil
	}
	i, j := 0, 0
	for i < len(fields) && j < len(excluded) {
		switch {
		case isPathPrefix(excluded[j], fields[i]):
			i++
		case slices.Compare(excluded[j], fields[i]) < 0:
			j++
		default:
			return notExcludedError(mongoerr.Location7246209, fields[i])
		}
	}
	if i < len(fields) {
		return notExcludedError(mongoerr.Location7246210, fields[i])
	}
	return nil
}

// notExcludedError is MongoDB's error for a regular field a wildcardProjection does not
// exclude. NB: MongoDB's message has no space before "is".
func notExcludedError(code mongoerr.Code, field []string) error {
	return mongoerr.New(code, "wildcardProjection paths must exclude all regular index fields, however '%s'is not excluded.", strings.Join(field, "."))
}

// isPathPrefix reports whether path p is path q or one of its ancestors.
func isPathPrefix(p, q []string) bool {
	return len(p) <= len(q) && slices.Equal(p, q[:len(p)])
}

// projectionTrue reads a wildcardProjection value: a number or a bool, and whether it
// includes; ok is false for anything else.
func projectionTrue(v bsoncore.Value) (incl, ok bool) {
	if b, ok := v.BooleanOK(); ok {
		return b, true
	}
	if n, ok := bsonx.NumberAsFloat64(v); ok {
		return n != 0, true
	}
	return false, false
}
