package ddl

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// validateWildcardElement checks the wildcard field of a key pattern ("$**" or "a.$**"):
// its value is a non-zero number, and "$**" is its last component only.
func validateWildcardElement(path string, v bsoncore.Value) error {
	if v.Type == bsoncore.TypeString {
		return mongoerr.New(mongoerr.CannotCreateIndex, "The key pattern value for an '$**' index must be a non-zero number, not a string.")
	}
	n, ok := bsonx.NumberAsFloat64(v)
	if !ok {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Values in v:2 index key pattern cannot be of type %s. Only numbers > 0, numbers < 0, and strings are allowed.", bsonx.TypeName(v.Type))
	}
	if n == 0 || n != n {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Values in the index key pattern cannot be 0.")
	}
	for _, part := range strings.Split(strings.TrimSuffix(path, "$**"), ".") {
		if part != "" && part[0] == '$' {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Index key contains an illegal field name: field name starts with '$'.")
		}
	}
	if strings.Contains(path, "..") || strings.HasPrefix(path, ".") {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot contain an empty field.")
	}
	return nil
}

// validateWildcard applies MongoDB's rules for wildcard indexes to index x (key pattern
// elems): wildcardProjection only on {"$**": ±1} and well formed; no unique, sparse or TTL
// (IndexCatalogImpl's validateWildcardSpec); no second plugin; MongoDB 7.0's rules for a
// compound wildcard index.
func validateWildcard(x *store.Index, elems []bsoncore.Element, hashed bool) error {
	wildcards, first := 0, ""
	for _, el := range elems {
		if catalog.IsWildcardPath(el.Key()) {
			wildcards++
			if first == "" {
				first = el.Key()
			}
		}
	}
	projV, hasProj := lookupSpec(x.Spec, "wildcardProjection")
	if wildcards == 0 {
		if hasProj {
			return mongoerr.New(mongoerr.BadValue, "The field 'wildcardProjection' is only allowed in 'wildcard' indexes")
		}
		return nil
	}
	if hashed {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Can't use more than one index plugin for a single index.")
	}
	if hasProj {
		if first != "$**" {
			return mongoerr.New(mongoerr.FailedToParse, "The field 'wildcardProjection' is only allowed when 'key' is {\"$**\": ±1} or {\"$**\": \"columnstore\"}")
		}
		if len(projV.Document()) <= 5 {
			return mongoerr.New(mongoerr.FailedToParse, "The 'wildcardProjection' field can't be an empty object")
		}
	}
	if len(elems) > 1 {
		if err := validateCompoundWildcard(elems, wildcards, first, hasProj); err != nil {
			return err
		}
	}
	for _, opt := range []string{"sparse", "unique"} {
		if catalog.SpecBool(x.Spec, opt) {
			return wildcardOptionError(opt, "")
		}
	}
	if _, ok := lookupSpec(x.Spec, "expireAfterSeconds"); ok {
		return wildcardOptionError("expireAfterSeconds", "cannot make a TTL index :: caused by :: ")
	}
	var proj bsoncore.Document
	if hasProj {
		proj = projV.Document()
	}
	if len(elems) > 1 && proj != nil {
		if err := validateCompoundProjection(x.Key, proj); err != nil {
			return err
		}
	}
	_, err := catalog.CompileWildcard(x.Key, proj)
	return err
}

// wildcardOptionError is IndexCatalogImpl's reportInvalidOption for a wildcard index.
func wildcardOptionError(opt, context string) error {
	return mongoerr.New(mongoerr.CannotCreateIndex, "%sIndex type 'wildcard' does not support the '%s' option", context, opt)
}

// validateCompoundWildcard applies MongoDB 7.0's rules for compound wildcard indexes
// (wildcard_validation.cpp, validateIndexSpec): one wildcard field, not overlapping the
// regular ones, and "$**" only with a wildcardProjection (which validateWildcard then
// checks excludes the regular fields).
func validateCompoundWildcard(elems []bsoncore.Element, wildcards int, wildcard string, hasProj bool) error {
	if wildcards > 1 {
		return mongoerr.New(mongoerr.Location7246201, "Index Key can contain only one wildcard index field")
	}
	if prefix := strings.TrimSuffix(strings.TrimSuffix(wildcard, "$**"), "."); prefix != "" {
		for _, el := range elems {
			if k := el.Key(); k != wildcard && (k == prefix || strings.HasPrefix(k, prefix+".")) {
				return mongoerr.New(mongoerr.Location7246204, "A wildcard index field should not overlap with and index key fields if "+
					"wildcard projection is empty, however '%s' is overlapping with the wildcard index field.", k)
			}
		}
	}
	if wildcard == "$**" && !hasProj {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Compound wildcard indexes on all fields must also specify 'wildcardProjection' option")
	}
	return nil
}
