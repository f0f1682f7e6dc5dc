package match

import (
	"encoding/binary"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// valueKind is how a CompileValue condition applies to a value ($pull's three matchers).
type valueKind uint8

const (
	valueObject   valueKind = iota // a query on element documents
	valueWrapped                   // operators (or a regex) applied to the element itself
	valueEquality                  // plain equality
)

// valueCond is a condition on a single value.
type valueCond struct {
	kind valueKind
	eq   bsoncore.Value // valueEquality: collated with coll
	coll bsonx.Collator // valueEquality's collation (nil: simple)
	sub  node           // valueObject: the query; valueWrapped: the query on {"": element}
}

// CompileValue compiles a condition on a single value with the semantics of update's
// $pull (MongoDB's PullNode):
//
//   - a document whose first key is a field operator ({$gte: 6}, {$in: [...]},
//     {$elemMatch: ...}): the operators apply to the value as to a field, so an array
//     value is traversed ({$gte: 6} matches [1, 7]);
//   - a regex: matches string values (and array values holding one);
//   - any other document ({a: 1, b: {$gt: 2}}, {} or {$and: [...]}): a query applied to
//     values that are documents; other values never match;
//   - anything else: the value equals it (numbers by value, documents field by field).
//
// Strings compare under opts.Collator, as Compile's do (opts may be nil).
func CompileValue(cond bsoncore.Value, opts *Options) (*Filter, error) {
	if err := cond.Validate(); err != nil {
		return nil, mongoerr.Wrap(err, mongoerr.InvalidBSON, "invalid BSON in condition")
	}
	p := &parser{opts: opts}
	if opts != nil {
		p.coll = opts.Collator
	}
	vc := &valueCond{}
	switch {
	case cond.Type == bsoncore.TypeEmbeddedDocument && !isOperatorKey(firstKey(cond.Data)):
		vc.kind = valueObject
		conj, err := p.parseDoc(cond.Data, levelTop, "")
		if err != nil {
			return nil, err
		}
		vc.sub = conjunction(conj)
	case cond.Type == bsoncore.TypeEmbeddedDocument || cond.Type == bsoncore.TypeRegex:
		vc.kind = valueWrapped
		n, err := p.parseField("", cond, levelTop, "")
		if err != nil {
			return nil, err
		}
		vc.sub = n
	default:
		vc.kind = valueEquality
		vc.eq, vc.coll = bsonx.Collate(p.coll, cond), p.coll
	}
	f := &Filter{paths: p.paths, hasExpr: p.hasExpr, value: vc}
	f.root = &valueRoot{vc: vc}
	return f, nil
}

// MatchValue reports whether v satisfies a condition compiled by CompileValue. For a
// Filter from Compile, it matches v when v is a document that matches.
func (f *Filter) MatchValue(v bsoncore.Value) bool {
	if f.value == nil {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return false
		}
		return f.Match(v.Data)
	}
	return f.value.match(v)
}

// match applies the condition to v.
func (vc *valueCond) match(v bsoncore.Value) bool {
	switch vc.kind {
	case valueObject:
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return false
		}
		ok, _, _ := vc.sub.eval(v.Data)
		return ok
	case valueWrapped:
		ok, _, _ := vc.sub.eval(wrap(v))
		return ok
	}
	return bsonx.Compare(bsonx.Collate(vc.coll, v), vc.eq) == 0
}

// wrap builds the document {"": v}.
func wrap(v bsoncore.Value) []byte {
	n := 4 + 1 + 1 + len(v.Data) + 1
	b := make([]byte, 4, n)
	binary.LittleEndian.PutUint32(b, uint32(n))
	b = append(b, byte(v.Type), 0)
	b = append(b, v.Data...)
	return append(b, 0)
}

// valueRoot lets Match treat a document as the value of a CompileValue condition.
type valueRoot struct{ vc *valueCond }

func (r *valueRoot) eval(doc []byte) (bool, int, error) {
	return r.vc.match(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}), -1, nil
}
