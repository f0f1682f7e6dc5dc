package expr

import (
	"testing"

	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzCompile checks that arbitrary expression bytes never panic: Compile fails with a
// *mongoerr.Error or returns an expression whose evaluation on a valid document returns
// a valid value or a *mongoerr.Error. The input is a document {"e": <expression>}, valid as
// the wire checks every request document before a handler sees it.
func FuzzCompile(f *testing.F) {
	for _, tc := range allCases() {
		d := tc.doc
		if d == "" {
			d = "{}"
		}
		f.Add([]byte(doc(f, `{"e": `+tc.expr+`}`)), []byte(doc(f, d)))
	}
	f.Fuzz(func(t *testing.T, spec, d []byte) {
		if wire.ValidateDocument(spec) != nil {
			return
		}
		e := bsoncore.Document(spec).Lookup("e")
		if e.Type == 0 {
			return
		}
		x, err := Compile(e, nil)
		if err != nil {
			if mongoerr.As(err) == nil {
				t.Fatalf("error %v is not a *mongoerr.Error", err)
			}
			return
		}
		if bsoncore.Document(d).Validate() != nil {
			return
		}
		v, err := x.Eval(d, nil)
		if err != nil {
			if mongoerr.As(err) == nil {
				t.Fatalf("error %v is not a *mongoerr.Error", err)
			}
			return
		}
		if v.Type != 0 {
			if err := v.Validate(); err != nil {
				t.Fatalf("Eval produced an invalid value: %v", err)
			}
		}
	})
}
