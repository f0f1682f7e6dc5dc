package vecindex

import (
	"strings"

	"github.com/cleavedb/cleave/exec/vector"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// checkQuery checks q against the index definition: its path must be a vector field of the
// query vector's dimensions and its filter may read only filter fields (mongot's refusals,
// reported as BadValue).
func checkQuery(def *vector.Def, q *Query) (*vector.Field, error) {
	field := def.Vector(q.Path)
	if field == nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Path '%s' needs to be indexed as vector", q.Path)
	}
	if len(q.Vector) != field.Dims {
		return nil, mongoerr.New(mongoerr.BadValue, "vector field is indexed with %d dimensions but queried with %d", field.Dims, len(q.Vector))
	}
	if q.Filter == nil {
		return field, nil
	}
	if q.Filter.HasExpr() {
		return nil, mongoerr.New(mongoerr.BadValue, "Operator $expr is not supported in a $vectorSearch filter")
	}
	for _, p := range q.Filter.Paths() {
		if !coveredByFilter(def, p) {
			return nil, mongoerr.New(mongoerr.BadValue, "Path '%s' needs to be indexed as filter", p)
		}
	}
	return field, nil
}

// coveredByFilter reports whether path is a filter field of def (or lies under one, as the
// paths under an $elemMatch do).
func coveredByFilter(def *vector.Def, path string) bool {
	for _, f := range def.Filters {
		if path == f || strings.HasPrefix(path, f+".") {
			return true
		}
	}
	return false
}
