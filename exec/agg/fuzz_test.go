package agg

import (
	"context"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/expr"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// FuzzParsePipeline checks that arbitrary pipeline bytes never panic: Parse either fails
// with a *mongoerr.Error, or returns a pipeline that runs over arbitrary documents and
// either yields documents or fails with a *mongoerr.Error. Stages are bounded to a small
// memory limit so that a generated $densify or $bucketAuto cannot run away.
func FuzzParsePipeline(f *testing.F) {
	for _, tc := range aggCases {
		d := []byte(nil)
		if len(tc.input) > 0 {
			d = streamtest.ExtDoc(f, tc.input[0])
		}
		f.Add([]byte(pipelineDoc(f, tc.pipeline)), d)
	}
	f.Fuzz(func(t *testing.T, pipeline, doc []byte) {
		if wire.ValidateDocument(pipeline) != nil {
			return // the wire answers InvalidBSON before any stage sees it
		}
		arr, ok := bsoncore.Document(pipeline).Lookup("p").ArrayOK()
		if !ok {
			return
		}
		env := &Env{DB: "test", Opts: &expr.Options{Now: time.Unix(0, 0)}, MemLimit: 1 << 20}
		p, err := Parse(env, arr, false)
		if err != nil {
			if mongoerr.As(err) == nil {
				t.Fatalf("parse error %v is not a *mongoerr.Error", err)
			}
			return
		}
		var docs []bsoncore.Document
		if wire.ValidateDocument(doc) == nil {
			docs = append(docs, doc, doc)
		}
		out, err := p.OpenOver(&stream.Slice{Docs: docs}, 0)
		if err != nil {
			if mongoerr.As(err) == nil {
				t.Fatalf("open error %v is not a *mongoerr.Error", err)
			}
			return
		}
		defer out.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for n := 0; n < 10_000; n++ {
			d, err := out.Next(ctx)
			if err != nil {
				if mongoerr.As(err) == nil && ctx.Err() == nil {
					t.Fatalf("run error %v is not a *mongoerr.Error", err)
				}
				return
			}
			if d == nil {
				return
			}
		}
	})
}

// pipelineDoc wraps a JSON pipeline as the document {p: pipeline}.
func pipelineDoc(tb testing.TB, pipeline string) bsoncore.Document {
	tb.Helper()
	return streamtest.ExtDoc(tb, `{"p": `+pipeline+`}`)
}
