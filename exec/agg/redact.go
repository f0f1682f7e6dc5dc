package agg

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// redactStage is $redact: its expression, evaluated on the document and then on each
// embedded document it descends into ($$CURRENT; $$ROOT stays the whole document), decides
// whether to keep the (sub)document whole ($$KEEP), drop it ($$PRUNE) or keep its scalar
// fields and decide again for each embedded document ($$DESCEND).
type redactStage struct {
	raw bsoncore.Value
	e   *expr.Expr
}

// The values of $$DESCEND, $$PRUNE and $$KEEP, as in MongoDB.
const (
	redactDescend = "descend"
	redactPrune   = "prune"
	redactKeep    = "keep"
)

// parseRedactStage parses {$redact: expression}.
func parseRedactStage(env *Env, _ string, arg bsoncore.Value) (Stage, error) {
	opts := expr.Options{}
	if env.Opts != nil {
		opts = *env.Opts
	}
	// $$CURRENT is a parameter: it moves into embedded documents while $$ROOT does not.
	opts.Params = append(append([]string(nil), opts.Params...), "CURRENT")
	e, err := expr.Compile(bindRedactVars(arg), &opts)
	if err != nil {
		return nil, err
	}
	return &redactStage{raw: arg, e: e}, nil
}

// bindRedactVars replaces $$DESCEND, $$PRUNE and $$KEEP, which only $redact defines, with
// their values (a path below them, such as "$$KEEP.a", reads nothing). Arguments of
// $literal are left alone.
func bindRedactVars(v bsoncore.Value) bsoncore.Value {
	switch v.Type {
	case bsoncore.TypeString:
		s := v.StringValue()
		for _, name := range []string{redactDescend, redactPrune, redactKeep} {
			ref := "$$" + strings.ToUpper(name)
			switch {
			case s == ref:
				return objValue([]string{"$literal"}, []bsoncore.Value{bsonx.StringValue(name)})
			case strings.HasPrefix(s, ref+"."):
				return bsonx.StringValue("$$REMOVE")
			}
		}
	case bsoncore.TypeEmbeddedDocument:
		elems, _ := v.Document().Elements()
		if len(elems) == 1 && elems[0].Key() == "$literal" {
			return v
		}
		keys := make([]string, len(elems))
		vals := make([]bsoncore.Value, len(elems))
		for i, el := range elems {
			keys[i], vals[i] = el.Key(), bindRedactVars(el.Value())
		}
		return objValue(keys, vals)
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		for i, x := range vals {
			vals[i] = bindRedactVars(x)
		}
		return arrayValue(vals)
	}
	return v
}

// Spec implements Stage.
func (s *redactStage) Spec() bsoncore.Document { return StageSpec("$redact", s.raw) }

// Open implements Stage.
func (s *redactStage) Open(in stream.Stream) (stream.Stream, error) {
	vars := expr.NewVars()
	return &mapStream{in: in, fn: func(dst []byte, d bsoncore.Document) ([]byte, bool, error) {
		return s.redactDoc(dst, d, d, vars)
	}}, nil
}

// redactDoc appends the redaction of cur (a document of root) to dst; it reports false when
// cur is pruned.
func (s *redactStage) redactDoc(dst []byte, cur, root bsoncore.Document, vars *expr.Vars) ([]byte, bool, error) {
	vars.Set("CURRENT", bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: cur})
	v, err := s.e.Eval(root, vars)
	if err != nil {
		return dst, false, err
	}
	action, _ := v.StringValueOK()
	if v.Type != bsoncore.TypeString || (action != redactDescend && action != redactPrune && action != redactKeep) {
		return dst, false, mongoerr.New(mongoerr.Location17053,
			"$redact's expression should not return anything aside from the variables $$KEEP, $$DESCEND, and $$PRUNE, but returned %s", redactString(v))
	}
	switch action {
	case redactKeep:
		return append(dst, cur...), true, nil
	case redactPrune:
		return dst, false, nil
	}
	idx, dst := bsoncore.AppendDocumentStart(dst)
	elems, _ := cur.Elements()
	for _, el := range elems {
		if dst, _, err = s.redactValue(dst, el.Key(), el.Value(), root, vars); err != nil {
			return dst, false, err
		}
	}
	dst, err = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, err == nil, err
}

// redactValue appends key: v redacted (documents decided on, arrays filtered), or nothing
// when v is a pruned document; it reports whether it appended.
func (s *redactStage) redactValue(dst []byte, key string, v bsoncore.Value, root bsoncore.Document, vars *expr.Vars) ([]byte, bool, error) {
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		start := len(dst)
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeEmbeddedDocument, key)
		out, keep, err := s.redactDoc(dst, v.Document(), root, vars)
		if err != nil || !keep {
			return dst[:start], false, err
		}
		return out, true, nil
	case bsoncore.TypeArray:
		aidx, out := bsoncore.AppendArrayElementStart(dst, key)
		vals, _ := v.Array().Values()
		n := 0
		for _, x := range vals {
			var keep bool
			var err error
			if out, keep, err = s.redactValue(out, bsonx.ArrayKey(n), x, root, vars); err != nil {
				return dst, false, err
			}
			if keep {
				n++
			}
		}
		out, err := bsoncore.AppendArrayEnd(out, aidx)
		return out, true, err
	}
	return bsoncore.AppendValueElement(dst, key, v), true, nil
}

// redactString prints a value as MongoDB's Value::toString does in $redact's error.
func redactString(v bsoncore.Value) string {
	if v.Type == 0 {
		return "MISSING"
	}
	return bsonx.ShellString(v)
}
