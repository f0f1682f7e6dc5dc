package ddl

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/catalog"
	"github.com/cleavedb/cleave/exec/collation"
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/exec/text"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// indexSpecFields are the fields MongoDB 7.0 allows in an index specification. Those
// cleave cannot honour are refused by checkIndexOption, the rest are kept in the spec.
var indexSpecFields = map[string]bool{
	"key": true, "name": true, "v": true, "unique": true, "sparse": true,
	"partialFilterExpression": true, "expireAfterSeconds": true, "hidden": true,
	"collation": true, "background": true, "ns": true, "storageEngine": true,
	"weights": true, "default_language": true, "language_override": true,
	"textIndexVersion": true, "2dsphereIndexVersion": true, "bits": true, "min": true,
	"max": true, "bucketSize": true, "wildcardProjection": true, "dropDups": true,
	"prepareUnique": true, "coarsestIndexedLevel": true, "finestIndexedLevel": true,
	"clustered": true,
}

// maxTTLSeconds is the largest expireAfterSeconds MongoDB accepts (a 32-bit int).
const maxTTLSeconds = math.MaxInt32

// ParseIndexSpec validates one element of createIndexes' indexes array and returns it as a
// catalog index (ID 0, not ready). Spec keeps the options in the client's order, without
// key, name, v and ns; a simple collation is dropped, as MongoDB drops it.
func ParseIndexSpec(v bsoncore.Value, ignoreUnknown bool) (store.Index, error) {
	spec, ok := v.DocumentOK()
	if !ok {
		return store.Index{}, mongoerr.New(mongoerr.TypeMismatch,
			"BSON field 'createIndexes.indexes' is the wrong type '%s', expected type 'object'", bsonx.TypeName(v.Type))
	}
	var x store.Index
	haveKey, haveName := false, false
	idx, opts := bsoncore.AppendDocumentStart(nil)
	nopts := 0
	elems, _ := spec.Elements()
	for _, el := range elems {
		key, val := el.Key(), el.Value()
		if !indexSpecFields[key] {
			if ignoreUnknown {
				continue
			}
			return x, mongoerr.New(mongoerr.InvalidIndexSpecificationOption,
				"The field '%s' is not valid for an index specification. Specification: %s", key, bsonx.ShellString(v))
		}
		switch key {
		case "key":
			d, ok := val.DocumentOK()
			if !ok {
				return x, mongoerr.New(mongoerr.TypeMismatch, "The field 'key' must be an object, but got %s", bsonx.TypeName(val.Type))
			}
			haveKey, x.Key = true, d
		case "name":
			s, ok := val.StringValueOK()
			if !ok {
				return x, mongoerr.New(mongoerr.TypeMismatch, "The field 'name' must be a string, but got %s", bsonx.TypeName(val.Type))
			}
			haveName, x.Name = true, s
		case "v", "ns":
			if key == "v" {
				if n, ok := bsonx.NumberAsInt64(val); !ok || n < 1 || n > 2 {
					return x, mongoerr.New(mongoerr.CannotCreateIndex, "Invalid index specification %s; cannot create an index with v=%s", bsonx.ShellString(v), bsonx.ShellString(val))
				}
			}
		case "collation":
			c, err := parseIndexCollation(val)
			if err != nil {
				return x, err
			}
			// The full spec; a simple one stays as {locale: "simple"} until
			// ResolveIndexCollation tells it from an absent one, then goes.
			d := simpleCollation
			if c != nil {
				d = c.Document()
			}
			opts = bsoncore.AppendDocumentElement(opts, key, d)
			nopts++
		default:
			keep, err := checkIndexOption(key, val)
			if err != nil {
				return x, err
			}
			if keep {
				opts = bsoncore.AppendValueElement(opts, key, val)
				nopts++
			}
		}
	}
	if !haveKey {
		return x, mongoerr.New(mongoerr.FailedToParse, "The 'key' field is a required property of an index specification")
	}
	if !haveName {
		// Drivers and mongosh always name their indexes; the server generates the name the
		// way they do when one is missing.
		if err := validateKeyPattern(x.Key); err != nil {
			return x, err
		}
		x.Name = defaultIndexName(x.Key)
	}
	if nopts > 0 {
		x.Spec, _ = bsoncore.AppendDocumentEnd(opts, idx)
	}
	return x, validateIndex(&x)
}

// simpleCollation is {locale: "simple"}.
var simpleCollation = bsoncore.NewDocumentBuilder().AppendString("locale", "simple").Build()

// parseIndexCollation parses an index spec's collation (nil: simple).
func parseIndexCollation(v bsoncore.Value) (*collation.Collation, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "The field 'collation' must be an object, but got %s", bsonx.TypeName(v.Type))
	}
	return collation.Parse(d)
}

// ResolveIndexCollation settles the collation of index x (from ParseIndexSpec) on a
// collection whose default collation is dflt (nil: simple), as MongoDB does: an index that
// names none inherits the default; a simple one is stored without a collation.
func ResolveIndexCollation(x *store.Index, dflt bsoncore.Document) {
	c, ok := x.Spec.Lookup("collation").DocumentOK()
	switch {
	case ok && bytes.Equal(c, simpleCollation):
		x.Spec = withoutField(x.Spec, "collation")
	case !ok && dflt != nil:
		idx, out := bsoncore.AppendDocumentStart(nil)
		if x.Spec != nil {
			out = append(out, bsonx.DocBody(x.Spec)...)
		}
		out = bsoncore.AppendDocumentElement(out, "collation", dflt)
		x.Spec, _ = bsoncore.AppendDocumentEnd(out, idx)
	}
}

// withoutField returns d without its field name (nil when nothing remains).
func withoutField(d bsoncore.Document, name string) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(nil)
	n := 0
	elems, _ := d.Elements()
	for _, el := range elems {
		if el.Key() != name {
			out = append(out, el...)
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// checkIndexOption validates one option of an index spec and reports whether the stored
// spec keeps it.
func checkIndexOption(key string, v bsoncore.Value) (bool, error) {
	switch key {
	case "hidden":
		// A hidden index is built and maintained but never planned with (exec/query).
		// NB: MongoDB's message names the field 'name' (validateIndexSpec), and so does this.
		if v.Type != bsoncore.TypeBoolean {
			return false, mongoerr.New(mongoerr.TypeMismatch, "The field 'name' must be a bool, but got %s", bsonx.TypeName(v.Type))
		}
		return true, nil
	case "unique", "sparse", "background", "dropDups", "prepareUnique":
		if _, ok := v.BooleanOK(); !ok && !bsonx.IsNumber(v.Type) {
			return false, mongoerr.New(mongoerr.TypeMismatch, "The field '%s' must be a bool, but got %s", key, bsonx.TypeName(v.Type))
		}
		return key != "dropDups", nil
	case "partialFilterExpression":
		d, ok := v.DocumentOK()
		if !ok {
			return false, mongoerr.New(mongoerr.TypeMismatch, "The field 'partialFilterExpression' must be an object, but got %s", bsonx.TypeName(v.Type))
		}
		if _, err := match.Compile(d, nil); err != nil {
			return false, err
		}
		return true, nil
	case "expireAfterSeconds":
		n, ok := bsonx.NumberAsFloat64(v)
		if !ok {
			return false, mongoerr.New(mongoerr.CannotCreateIndex, "TTL index 'expireAfterSeconds' option must be numeric, but received a type of '%s'", bsonx.TypeName(v.Type))
		}
		if math.IsNaN(n) || n < 0 || n > maxTTLSeconds {
			return false, mongoerr.New(mongoerr.CannotCreateIndex, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
		}
		return true, nil
	case "storageEngine":
		return true, nil
	case "wildcardProjection":
		// The rest is checked with the key pattern (validateWildcard).
		if _, ok := v.DocumentOK(); !ok {
			return false, mongoerr.New(mongoerr.TypeMismatch, "The field 'wildcardProjection' must be a non-empty object, but got %s", bsonx.TypeName(v.Type))
		}
		return true, nil
	case "clustered":
		return false, mongoerr.New(mongoerr.NotImplemented, "clustered indexes are not supported by cleave")
	case "2dsphereIndexVersion", "coarsestIndexedLevel", "finestIndexedLevel":
		return checkGeoOption(key, v)
	case "weights", "default_language", "language_override", "textIndexVersion":
		return checkTextOption(key, v)
	case "bits", "min", "max":
		// A 2d index's; checked with the key pattern (validate2d).
		return true, nil
	}
	return false, mongoerr.New(mongoerr.NotImplemented, "the index option '%s' (text, geospatial and wildcard indexes) is not supported by cleave", key)
}

// isZero reports whether a number is 0.
func isZero(v bsoncore.Value) bool {
	f, _ := bsonx.NumberAsFloat64(v)
	return f == 0
}

// validateIndex checks the key pattern and name of x and the options that depend on it.
func validateIndex(x *store.Index) error {
	if x.Name == "" {
		return mongoerr.New(mongoerr.CannotCreateIndex, "The index name cannot be empty")
	}
	if x.Name == "*" {
		return mongoerr.New(mongoerr.BadValue, "The index name '*' is not valid.")
	}
	if err := validateKeyPattern(x.Key); err != nil {
		return err
	}
	elems, _ := x.Key.Elements()
	hashed := 0
	for _, el := range elems {
		if s, ok := el.Value().StringValueOK(); ok && s == "hashed" {
			hashed++
		}
	}
	if hashed > 1 {
		return mongoerr.New(mongoerr.CannotCreateIndex, "A maximum of one index field is allowed to be hashed but found %d for 'key' %s", hashed, bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: x.Key}))
	}
	if err := validateText(x, elems); err != nil {
		return err
	}
	elems, _ = x.Key.Elements()
	if err := validateWildcard(x, elems, hashed > 0); err != nil {
		return err
	}
	if err := validateGeo(x, elems); err != nil {
		return err
	}
	if hashed > 0 && catalog.SpecBool(x.Spec, "unique") {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Currently hashed indexes cannot guarantee uniqueness. Use a regular index.")
	}
	if isIDKey(elems) && x.Spec != nil && x.Spec.Lookup("hidden").Type != 0 {
		return mongoerr.New(mongoerr.BadValue, "can't hide _id index")
	}
	if x.Name == store.IDIndexName {
		if len(elems) != 1 || elems[0].Key() != "_id" {
			return mongoerr.New(mongoerr.BadValue, "The index name '_id_' is reserved for the _id index, which must have key pattern {_id: 1}")
		}
	}
	return nil
}

// isIDKey reports whether a key pattern is {_id: 1}, the _id index's.
func isIDKey(elems []bsoncore.Element) bool {
	if len(elems) != 1 || elems[0].Key() != "_id" {
		return false
	}
	n, ok := bsonx.NumberAsFloat64(elems[0].Value())
	return ok && n == 1
}

// validateKeyPattern checks every field of a key pattern.
func validateKeyPattern(key bsoncore.Document) error {
	elems, err := key.Elements()
	if err != nil || len(elems) == 0 {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot be empty.")
	}
	for _, el := range elems {
		if err := validateKeyElement(el); err != nil {
			return err
		}
	}
	return nil
}

// validateKeyElement checks one field of a key pattern: a non-empty path and a non-zero
// number, "hashed", "2dsphere", "2d" or "text" (geoHaystack indexes are not implemented).
func validateKeyElement(el bsoncore.Element) error {
	path, v := el.Key(), el.Value()
	if path == "" {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot be an empty field.")
	}
	if s, ok := v.StringValueOK(); ok && s == "text" && path == text.Wildcard {
		return nil // a wildcard text index, fixed by validateText
	}
	if catalog.IsWildcardPath(path) {
		return validateWildcardElement(path, v)
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot contain an empty field.")
		}
		if part[0] == '$' {
			return mongoerr.New(mongoerr.CannotCreateIndex, "Index key contains an illegal field name: field name starts with '$'.")
		}
	}
	if s, ok := v.StringValueOK(); ok {
		switch s {
		case "hashed", "2dsphere", "2d", "text":
			return nil
		case "geoHaystack", "columnstore":
			return mongoerr.New(mongoerr.NotImplemented, "%s indexes are not supported by cleave", s)
		}
		return mongoerr.New(mongoerr.CannotCreateIndex, "Unknown index plugin '%s'", s)
	}
	n, ok := bsonx.NumberAsFloat64(v)
	if !ok {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Values in v:2 index key pattern cannot be of type %s. Only numbers > 0, numbers < 0, and strings are allowed.", bsonx.TypeName(v.Type))
	}
	if n == 0 || math.IsNaN(n) {
		return mongoerr.New(mongoerr.CannotCreateIndex, "Values in the index key pattern must not be zero, but found %s for field '%s'", bsonx.ShellString(v), path)
	}
	return nil
}

// defaultIndexName is MongoDB's generated name of a key pattern: {a: 1, b: -1} → "a_1_b_-1".
func defaultIndexName(key bsoncore.Document) string {
	elems, _ := key.Elements()
	parts := make([]string, 0, 2*len(elems))
	for _, el := range elems {
		v := el.Value()
		s, ok := v.StringValueOK()
		if !ok {
			if n, isInt := bsonx.NumberAsInt64(v); isInt && float64(n) == mustFloat(v) {
				s = strconv.FormatInt(n, 10)
			} else {
				s = strconv.FormatFloat(mustFloat(v), 'g', -1, 64)
			}
		}
		parts = append(parts, el.Key(), s)
	}
	return strings.Join(parts, "_")
}

// mustFloat returns a number as float64 (0 for anything else).
func mustFloat(v bsoncore.Value) float64 {
	f, _ := bsonx.NumberAsFloat64(v)
	return f
}

// IndexComparison is how a requested index relates to an existing one, as MongoDB's
// IndexDescriptor::compareIndexOptions decides it.
type IndexComparison int

// How a requested index compares with an existing one.
const (
	indexDifferent  IndexComparison = iota // another key pattern or signature option
	IndexEquivalent                        // same signature, other options differ
	IndexIdentical                         // the same index
)

// CompareIndexes compares a requested index with an existing one. The signature is the key
// pattern, partialFilterExpression, wildcardProjection, unique and sparse, and a text
// index's weights and languages (collation is always simple here).
func CompareIndexes(req, old *store.Index) IndexComparison {
	if bsonx.CompareDocuments(req.Key, old.Key) != 0 ||
		!sameSpecValue(req.Spec, old.Spec, "partialFilterExpression") ||
		!sameSpecValue(req.Spec, old.Spec, "wildcardProjection") ||
		catalog.SpecBool(req.Spec, "unique") != catalog.SpecBool(old.Spec, "unique") ||
		catalog.SpecBool(req.Spec, "sparse") != catalog.SpecBool(old.Spec, "sparse") ||
		!sameSpecValue(req.Spec, old.Spec, "weights") ||
		!sameSpecValue(req.Spec, old.Spec, "default_language") ||
		!sameSpecValue(req.Spec, old.Spec, "language_override") {
		return indexDifferent
	}
	if !sameSpecValue(req.Spec, old.Spec, "expireAfterSeconds") || catalog.SpecBool(req.Spec, "hidden") != catalog.SpecBool(old.Spec, "hidden") {
		return IndexEquivalent
	}
	return IndexIdentical
}

// sameSpecValue reports whether two specs have equal values (or none) under key.
func sameSpecValue(a, b bsoncore.Document, key string) bool {
	va, oka := lookupSpec(a, key)
	vb, okb := lookupSpec(b, key)
	if oka != okb {
		return false
	}
	return !oka || bsonx.Compare(va, vb) == 0
}

// lookupSpec returns the value of key in spec, which may be nil.
func lookupSpec(spec bsoncore.Document, key string) (bsoncore.Value, bool) {
	if spec == nil {
		return bsoncore.Value{}, false
	}
	v, err := spec.LookupErr(key)
	return v, err == nil
}

// SpecString formats an index spec as MongoDB's messages print it.
func SpecString(x *store.Index) string {
	return bsonx.ShellString(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: catalog.IndexSpecDoc(x)})
}

// ContainsID reports whether ids holds id.
func ContainsID(ids []store.IndexID, id store.IndexID) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
