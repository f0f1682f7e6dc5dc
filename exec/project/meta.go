package project

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// addTextScore parses {name: {$meta: "textScore"}}: the score of a $text query, which
// needs one (40218 otherwise). Like MongoDB's, it sets neither inclusion nor exclusion: the
// projection's other fields decide, and the score comes last, replacing a stored field of
// the same name.
func (p *parser) addTextScore(path string, parts []string) error {
	if p.opts == nil || p.opts.Filter == nil {
		return mongoerr.New(codeNoTextScore, "query requires text score metadata, but it is not available")
	}
	if _, ok := p.opts.Filter.Text(); !ok {
		return mongoerr.New(codeNoTextScore, "query requires text score metadata, but it is not available")
	}
	if len(parts) > 1 {
		return mongoerr.New(mongoerr.NotImplemented, "a $meta projection on a dotted path (%s) is not supported by cleave", path)
	}
	p.metas = append(p.metas, path)
	return nil
}

// appendMetas appends the projection's $meta fields to the document it made at
// dst[start:], after dropping any field of the same name.
func (pr *Projection) appendMetas(dst []byte, start int, src bsoncore.Document) []byte {
	score, ok := bsonx.TextScore(src)
	if !ok {
		return dst
	}
	doc := bsoncore.Document(dst[start:])
	idx, out := bsoncore.AppendDocumentStart(dst[:start:start])
	elems, _ := doc.Elements()
	for _, el := range elems {
		if !pr.isMeta(el.Key()) {
			out = append(out, el...)
		}
	}
	for _, name := range pr.metas {
		out = bsoncore.AppendDoubleElement(out, name, score)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// isMeta reports whether name is one of the projection's $meta fields.
func (pr *Projection) isMeta(name string) bool {
	for _, m := range pr.metas {
		if m == name {
			return true
		}
	}
	return false
}
