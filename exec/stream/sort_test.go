package stream_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/stream"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

func TestSortSpillMatchesInMemory(t *testing.T) {
	temp, dir := streamtest.Temp(t)
	docs := streamtest.Docs(3000)
	for _, spec := range [][]bsonx.SortField{
		{{Path: "a"}},
		{{Path: "a", Desc: true}, {Path: "b"}},
		{{Path: "b", Desc: true}},
	} {
		want, err := streamtest.Drain(t, &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec})
		if err != nil {
			t.Fatal(err)
		}
		s := &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec, AllowDiskUse: true, Temp: temp, MaxBytes: 8 << 10}
		got, err := streamtest.Drain(t, s)
		if err != nil {
			t.Fatal(err)
		}
		if s.Spills() < 10 {
			t.Errorf("%v: %d spills, want many", spec, s.Spills())
		}
		if len(got) != len(want) {
			t.Fatalf("%v: %d documents, want %d", spec, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%v: document %d is %v, want %v", spec, i, got[i], want[i])
			}
		}
		streamtest.CheckEmpty(t, dir)
	}
}

func TestSortSpillLimits(t *testing.T) {
	temp, dir := streamtest.Temp(t)
	docs := streamtest.Docs(500)
	spec := []bsonx.SortField{{Path: "a"}}

	// Without allowDiskUse: MongoDB's 292, naming the bound.
	_, err := streamtest.Drain(t, &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec, MaxBytes: 4096})
	var me *mongoerr.Error
	if !errors.As(err, &me) || me.Code != mongoerr.QueryExceededMemoryLimitNoDiskUseAllowed ||
		me.Message != "Executor error during find command :: caused by :: Sort exceeded memory limit of 4096 bytes, but did not opt in to external sorting." {
		t.Fatalf("without allowDiskUse: %v", err)
	}

	// A top-k sort holds only its k best documents: no spill.
	want, _ := streamtest.Drain(t, &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec, Limit: 5})
	s := &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec, Limit: 5, MaxBytes: 4096}
	got, err := streamtest.Drain(t, s)
	if err != nil || s.Spills() != 0 || len(got) != 5 {
		t.Fatalf("top-k: %d documents, %d spills, %v", len(got), s.Spills(), err)
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("top-k document %d is %v, want %v", i, got[i], want[i])
		}
	}

	// Closed halfway (a cursor killed early): the spill is dropped.
	s = &stream.Sort{In: &stream.Slice{Docs: docs}, Spec: spec, AllowDiskUse: true, Temp: temp, MaxBytes: 4096}
	for range 10 {
		if _, err := s.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if s.Spills() == 0 {
		t.Fatal("no spill")
	}
	s.Close()
	streamtest.CheckEmpty(t, dir)
}
