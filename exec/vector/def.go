package vector

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Def is a vectorSearch index definition:
//
//	{fields: [{type: "vector", path, numDimensions, similarity, quantization}, {type: "filter", path}, ...]}
//
// MaxDims is the largest numDimensions MongoDB accepts.
type Def struct {
	Vectors []Field
	// Filters are the paths $vectorSearch's filter may name.
	Filters []string
}

// Field is one vector field of a definition.
type Field struct {
	Path string
	Dims int
	Sim  Similarity
	// Quant is how searches walk the field's graph (the definition's quantization).
	Quant Quantization
}

// MaxDims is the most dimensions a vector field may have (MongoDB's 8192).
const MaxDims = 8192

// Vector returns the vector field on path, or nil.
func (d *Def) Vector(path string) *Field {
	for i := range d.Vectors {
		if d.Vectors[i].Path == path {
			return &d.Vectors[i]
		}
	}
	return nil
}

// IsFilter reports whether path is declared as a filter field.
func (d *Def) IsFilter(path string) bool {
	for _, f := range d.Filters {
		if f == path {
			return true
		}
	}
	return false
}

// badDef is the error of an invalid definition.
func badDef(format string, args ...any) error {
	return mongoerr.New(mongoerr.BadValue, "Invalid index definition: "+format, args...)
}

// ParseDef parses and checks a vectorSearch index definition.
func ParseDef(doc bsoncore.Document) (*Def, error) {
	d := &Def{}
	elems, err := doc.Elements()
	if err != nil {
		return nil, badDef("not a document")
	}
	var fields bsoncore.Value
	for _, el := range elems {
		if el.Key() != "fields" {
			return nil, badDef("\"%s\" is not allowed", el.Key())
		}
		fields = el.Value()
	}
	arr, ok := fields.ArrayOK()
	if !ok {
		return nil, badDef("\"fields\" is required and must be an array")
	}
	vals, _ := arr.Values()
	seen := map[string]bool{}
	for i, v := range vals {
		fd, ok := v.DocumentOK()
		if !ok {
			return nil, badDef("\"fields[%d]\" must be a document", i)
		}
		if err := d.parseField(i, fd, seen); err != nil {
			return nil, err
		}
	}
	if len(d.Vectors) == 0 {
		return nil, badDef("\"fields\" must contain at least one vector field")
	}
	return d, nil
}

// parseField parses fields[i].
func (d *Def) parseField(i int, fd bsoncore.Document, seen map[string]bool) error {
	typ, _ := fd.Lookup("type").StringValueOK()
	path, ok := fd.Lookup("path").StringValueOK()
	if !ok || path == "" || strings.HasPrefix(path, "$") {
		return badDef("\"fields[%d].path\" must be a non-empty field path", i)
	}
	if seen[path] {
		return badDef("\"fields[%d].path\" %s is indexed twice", i, path)
	}
	seen[path] = true
	switch typ {
	case "filter":
		if err := onlyKeys(i, fd, "type", "path"); err != nil {
			return err
		}
		d.Filters = append(d.Filters, path)
		return nil
	case "vector":
	default:
		return badDef("\"fields[%d].type\" must be one of [vector, filter]", i)
	}
	if err := onlyKeys(i, fd, "type", "path", "numDimensions", "similarity", "quantization"); err != nil {
		return err
	}
	dims, ok := bsonx.NumberAsInt64(fd.Lookup("numDimensions"))
	if !ok || dims < 1 || dims > MaxDims {
		return badDef("\"fields[%d].numDimensions\" must be an integer between 1 and %d", i, MaxDims)
	}
	simName, _ := fd.Lookup("similarity").StringValueOK()
	sim, ok := parseSimilarity(simName)
	if !ok {
		return badDef("\"fields[%d].similarity\" must be one of [euclidean, cosine, dotProduct]", i)
	}
	quant, err := parseQuantization(i, fd)
	if err != nil {
		return err
	}
	d.Vectors = append(d.Vectors, Field{Path: path, Dims: int(dims), Sim: sim, Quant: quant})
	return nil
}

// parseQuantization reads fields[i].quantization, Atlas' "none" (the default), "scalar" or
// "binary".
func parseQuantization(i int, fd bsoncore.Document) (Quantization, error) {
	q, err := fd.LookupErr("quantization")
	if err != nil {
		return QuantNone, nil
	}
	switch s, _ := q.StringValueOK(); s {
	case "none":
		return QuantNone, nil
	case "scalar":
		return QuantScalar, nil
	case "binary":
		return QuantBinary, nil
	}
	return QuantNone, badDef("\"fields[%d].quantization\" must be one of [none, scalar, binary]", i)
}

// onlyKeys refuses a field of fields[i] not in allowed.
func onlyKeys(i int, fd bsoncore.Document, allowed ...string) error {
	elems, _ := fd.Elements()
	for _, el := range elems {
		found := false
		for _, a := range allowed {
			found = found || el.Key() == a
		}
		if !found {
			return badDef("\"fields[%d].%s\" is not allowed", i, el.Key())
		}
	}
	return nil
}

// ReadVector returns the numbers of v, an array of numbers, as float32s; ok is false for any
// other value (a document without a vector is not indexed, as in MongoDB).
func ReadVector(v bsoncore.Value) ([]float32, bool) {
	arr, ok := v.ArrayOK()
	if !ok {
		return nil, false
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, false
	}
	out := make([]float32, len(vals))
	for i, x := range vals {
		f, ok := bsonx.NumberAsFloat64(x)
		if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, false
		}
		out[i] = float32(f)
	}
	return out, true
}
