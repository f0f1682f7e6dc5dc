package agg

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// graphLookupStage is $graphLookup: a recursive search over another collection of the
// database. From the values of startWith it repeatedly reads the documents whose
// connectToField equals a value of the frontier (one query per depth, {$in: frontier}, so
// an index on connectToField serves it, on every shard the collection has), and the
// connectFromField values of the documents found become the next frontier, until a depth
// finds nothing new or maxDepth is reached. Each document is returned once (by _id), with
// its depth in depthField; the input document gets them as the array as.
type graphLookupStage struct {
	env         *Env
	raw         bsoncore.Value
	from        string
	startWith   *expr.Expr
	connectFrom string
	connectTo   string
	as          []string
	depthField  []string          // nil: none
	maxDepth    int64             // -1: unbounded
	restrict    bsoncore.Document // restrictSearchWithMatch; nil: none
}

// graphLookupSpec holds the raw arguments while they are being checked.
type graphLookupSpec struct {
	as, connectFrom, connectTo string
	startWith                  bsoncore.Value
}

// parseGraphLookupStage parses {$graphLookup: {from, startWith, connectFromField,
// connectToField, as, maxDepth, depthField, restrictSearchWithMatch}} with MongoDB's checks
// in MongoDB's order (DocumentSourceGraphLookUp::LiteParsed::parse, then createFromBson).
func parseGraphLookupStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "the $graphLookup stage specification must be an object, but found %s", bsonx.TypeName(arg.Type))
	}
	from, err := graphLookupFrom(env, d)
	if err != nil {
		return nil, err
	}
	s := &graphLookupStage{env: env, raw: arg, from: from, maxDepth: -1}
	var sp graphLookupSpec
	elems, _ := d.Elements()
	for _, el := range elems {
		if err := s.parseArg(&sp, el.Key(), el.Value()); err != nil {
			return nil, err
		}
	}
	if sp.as == "" || sp.startWith.Type == 0 || sp.connectFrom == "" || sp.connectTo == "" {
		return nil, mongoerr.New(mongoerr.Location40105,
			"$graphLookup requires 'from', 'as', 'startWith', 'connectFromField', and 'connectToField' to be specified.")
	}
	if s.as, err = expr.SplitPath(sp.as); err != nil {
		return nil, err
	}
	for _, p := range []string{sp.connectFrom, sp.connectTo} {
		if _, err := expr.SplitPath(p); err != nil {
			return nil, err
		}
	}
	s.connectFrom, s.connectTo = sp.connectFrom, sp.connectTo
	if s.startWith, err = env.CompileExpr(sp.startWith); err != nil {
		return nil, err
	}
	return s, nil
}

// graphLookupFrom checks the from argument as MongoDB's lite parser does, before any other.
func graphLookupFrom(env *Env, d bsoncore.Document) (string, error) {
	v, err := d.LookupErr("from")
	if err != nil {
		return "", mongoerr.New(mongoerr.FailedToParse, "missing 'from' option to $graphLookup stage specification: %s", bsonx.ShellDoc(d))
	}
	switch v.Type {
	case bsoncore.TypeString:
		from := v.StringValue()
		if from == "" || strings.IndexByte(from, 0) >= 0 {
			return "", mongoerr.New(mongoerr.InvalidNamespace, "invalid $graphLookup namespace: %s.%s", env.DB, from)
		}
		return from, nil
	case bsoncore.TypeEmbeddedDocument:
		db, _ := v.Document().Lookup("db").StringValueOK()
		coll, _ := v.Document().Lookup("coll").StringValueOK()
		return "", mongoerr.New(mongoerr.FailedToParse,
			"$graphLookup with syntax {from: {db:<>, coll:<>},..} is not supported for db: %s and coll: %s", db, coll)
	}
	return "", mongoerr.New(mongoerr.FailedToParse, "$graphLookup 'from' field must be a string, but found %s", bsonx.TypeName(v.Type))
}

// parseArg reads one argument of the specification into s (or sp, for those checked once
// all are read).
func (s *graphLookupStage) parseArg(sp *graphLookupSpec, k string, v bsoncore.Value) error {
	switch k {
	case "startWith":
		sp.startWith = v
		return nil
	case "maxDepth":
		return s.parseMaxDepth(v)
	case "restrictSearchWithMatch":
		return s.parseRestrict(v)
	case "from", "as", "connectFromField", "connectToField", "depthField":
		if v.Type != bsoncore.TypeString {
			return mongoerr.New(mongoerr.Location40103, "expected string as argument for %s, found: %s", k, bsonx.TypeName(v.Type))
		}
	default:
		return mongoerr.New(mongoerr.Location40104, "Unknown argument to $graphLookup: %s", k)
	}
	str := v.StringValue()
	switch k {
	case "as":
		sp.as = str
	case "connectFromField":
		sp.connectFrom = str
	case "connectToField":
		sp.connectTo = str
	case "depthField":
		p, err := expr.SplitPath(str)
		if err != nil {
			return err
		}
		s.depthField = p
	}
	return nil
}

// parseMaxDepth reads maxDepth: a non-negative whole number.
func (s *graphLookupStage) parseMaxDepth(v bsoncore.Value) error {
	f, ok := bsonx.NumberAsFloat64(v)
	if !ok {
		return mongoerr.New(mongoerr.Location40100, "maxDepth must be numeric, found type: %s", bsonx.TypeName(v.Type))
	}
	n, _ := bsonx.NumberAsInt64(v)
	if v.Type == bsoncore.TypeDouble || v.Type == bsoncore.TypeDecimal128 {
		n = safeInt64(f)
	}
	if n < 0 {
		return mongoerr.New(mongoerr.Location40101, "maxDepth requires a nonnegative argument, found: %d", n)
	}
	if float64(n) != f {
		return mongoerr.New(mongoerr.Location40102, "maxDepth could not be represented as a long long: %d", n)
	}
	s.maxDepth = n
	return nil
}

// safeInt64 converts f as MongoDB's safeNumberLong does: NaN is 0, out-of-range values
// saturate, others truncate.
func safeInt64(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// parseRestrict reads restrictSearchWithMatch, a query filter checked now.
func (s *graphLookupStage) parseRestrict(v bsoncore.Value) error {
	d, ok := v.DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.Location40185, "restrictSearchWithMatch must be an object, found %s", bsonx.TypeName(v.Type))
	}
	if _, err := s.env.compileFilter(d); err != nil {
		if me := mongoerr.As(err); me != nil {
			return mongoerr.New(me.Code, "Failed to parse 'restrictSearchWithMatch' option to $graphLookup :: caused by :: %s", me.Message)
		}
		return err
	}
	s.restrict = d
	return nil
}

// Spec implements Stage.
func (s *graphLookupStage) Spec() bsoncore.Document { return StageSpec("$graphLookup", s.raw) }
