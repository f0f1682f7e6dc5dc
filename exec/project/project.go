package project

import (
	"github.com/cleavedb/cleave/exec/match"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Options configure compilation.
type Options struct {
	// Filter is the query's compiled filter, for the positional $ operator (its
	// MatchPos gives Apply's pos).
	Filter *match.Filter
	// Expr compiles an aggregation expression used as a projection value (MongoDB 4.4+).
	// Nil: expressions are refused with NotImplemented (238); literals still work.
	Expr func(bsoncore.Value) (func(doc bsoncore.Document) (bsoncore.Value, error), error)
}

// Projection is a compiled find projection. It is immutable and safe for concurrent use.
type Projection struct {
	root       *level
	inclusion  bool
	includeID  bool
	positional bool
	paths      []string
	empty      bool
	metas      []string // fields set to the $text score, last (meta.go)
}

// Compile compiles a find projection. Errors are *mongoerr.Error with MongoDB's codes.
func Compile(spec bsoncore.Document, opts *Options) (*Projection, error) {
	if !validDeep(spec, 0) {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid BSON in projection")
	}
	p := &parser{opts: opts, root: &level{}}
	if err := p.parseLevel(spec, ""); err != nil {
		return nil, err
	}
	// {_id: 1} alone includes _id and nothing else, as MongoDB's projection does.
	onlyID := p.idSet && p.idIncl && len(p.root.fields) == 0 && !p.positional
	pr := &Projection{
		root:       p.root,
		inclusion:  p.mode == modeInclusion || onlyID,
		includeID:  !p.idSet || p.idIncl,
		positional: p.positional,
		paths:      p.paths,
		empty:      len(p.root.fields) == 0 && !p.idSet && len(p.metas) == 0,
		metas:      p.metas,
	}
	if pr.inclusion && pr.includeID {
		pr.paths = append([]string{"_id"}, pr.paths...)
	}
	return pr, nil
}

// IsInclusion reports whether the projection lists the fields to keep (otherwise it
// lists fields to drop, or only slices arrays).
func (p *Projection) IsInclusion() bool { return p.inclusion }

// IncludesID reports whether _id is in the output.
func (p *Projection) IncludesID() bool { return p.includeID }

// Paths returns the projected paths in spec order: for an inclusion projection, every
// path the output can contain (_id first when included), so a covered plan needs them
// all; for an exclusion projection, the excluded or sliced paths.
func (p *Projection) Paths() []string { return p.paths }

// Apply appends the projection of doc to dst. pos is the position Filter.MatchPos
// returned, used by the positional $ operator (-1 if none).
func (p *Projection) Apply(dst []byte, doc bsoncore.Document, pos int) ([]byte, error) {
	if p.empty {
		return append(dst, doc...), nil
	}
	a := applier{p: p, root: doc, pos: pos}
	start := len(dst)
	var err error
	if p.inclusion {
		dst, err = a.include(dst, doc, p.root, true)
	} else {
		dst, err = a.exclude(dst, doc, p.root, true)
	}
	if err != nil || len(p.metas) == 0 {
		return dst, err
	}
	return p.appendMetas(dst, start, doc), nil
}

// validDeep reports whether doc is well-formed BSON all the way down (bsoncore's
// Validate does not check nested values, whose accessors may then panic).
func validDeep(doc []byte, depth int) bool {
	if depth > 200 || bsoncore.Document(doc).Validate() != nil {
		return false
	}
	ok := true
	_ = elems(doc, func(el bsoncore.Element) error {
		v, err := el.ValueErr()
		if err != nil {
			ok = false
			return nil
		}
		switch v.Type {
		case bsoncore.TypeString, bsoncore.TypeSymbol, bsoncore.TypeJavaScript:
			if _, good := v.StringValueOK(); !good && v.Type == bsoncore.TypeString {
				ok = false
			}
		case bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
			if !validDeep(v.Data, depth+1) {
				ok = false
			}
		}
		return nil
	})
	return ok
}
