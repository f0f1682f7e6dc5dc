package project

import (
	"testing"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzProjection checks that arbitrary projection bytes never panic and that Apply on
// an arbitrary valid document appends one valid document or fails with a
// *mongoerr.Error.
func FuzzProjection(f *testing.F) {
	for _, tc := range projCases {
		f.Add([]byte(doc(f, tc.spec)), []byte(doc(f, tc.doc)), 0)
	}
	for _, tc := range projErrCases {
		f.Add([]byte(doc(f, tc.spec)), []byte(doc(f, `{"a": [1, {"b": 2}]}`)), -1)
	}
	f.Fuzz(func(t *testing.T, spec, d []byte, pos int) {
		p, err := Compile(spec, nil)
		if err != nil {
			if mongoerr.As(err) == nil {
				t.Fatalf("error %v is not a *mongoerr.Error", err)
			}
			return
		}
		if bsoncore.Document(d).Validate() != nil {
			return
		}
		out, err := p.Apply(nil, d, pos)
		if err != nil {
			if mongoerr.As(err) == nil {
				t.Fatalf("error %v is not a *mongoerr.Error", err)
			}
			return
		}
		if err := bsoncore.Document(out).Validate(); err != nil {
			t.Fatalf("Apply produced invalid BSON: %v", err)
		}
	})
}
