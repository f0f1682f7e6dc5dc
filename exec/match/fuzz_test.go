package match

import (
	"testing"

	"github.com/cleavedb/cleave/wire/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzCompile checks that arbitrary filter bytes never panic: Compile either fails with
// a *mongoerr.Error or returns a filter that can be run on arbitrary documents.
func FuzzCompile(f *testing.F) {
	for _, tc := range matchCases {
		f.Add([]byte(doc(f, tc.filter)), []byte(doc(f, tc.doc)))
	}
	for _, tc := range errCases {
		f.Add([]byte(doc(f, tc.filter)), []byte(doc(f, `{"a": 1}`)))
	}
	f.Fuzz(func(t *testing.T, filter, d []byte) {
		flt, err := Compile(filter, nil)
		if err != nil {
			if mongoerr.As(err) == nil {
				t.Fatalf("error %v is not a *mongoerr.Error", err)
			}
			return
		}
		flt.Match(d)
		flt.MatchPos(d)
		for _, p := range flt.Paths() {
			flt.Equalities(p)
			flt.KeyEqualities(p)
			flt.Intervals(p)
			flt.IntervalsNonMultikey(p)
		}
		if v, err := CompileValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: filter}, nil); err == nil {
			v.MatchValue(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
		}
	})
}
