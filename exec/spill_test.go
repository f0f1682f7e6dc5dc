package exec

import (
	"context"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"go.uber.org/zap"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/wire"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

func TestSetParameterMemoryKnobs(t *testing.T) {
	e := New(Options{}, zap.NewNop())
	c := e.Connect(wire.ConnInfo{ID: 1})
	cmd := func(json string) bsoncore.Document {
		d := streamtest.ExtDoc(t, json)
		reply, err := c.Handle(context.Background(), &wire.Request{Body: d})
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	get := cmd(`{"getParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": 1, "internalDocumentSourceGroupMaxMemoryBytes": 1, "$db": "admin"}`)
	if v := get.Lookup("internalQueryMaxBlockingSortMemoryUsageBytes"); v.Type != bsoncore.TypeInt32 || v.Int32() != 100<<20 {
		t.Errorf("sort knob: %v", v)
	}
	if v := get.Lookup("internalDocumentSourceGroupMaxMemoryBytes"); v.Type != bsoncore.TypeInt64 || v.Int64() != 100<<20 {
		t.Errorf("group knob: %v", v)
	}
	set := cmd(`{"setParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": 1048576, "internalDocumentSourceGroupMaxMemoryBytes": {"$numberLong": "2097152"}, "$db": "admin"}`)
	if v := set.Lookup("was"); v.Type != bsoncore.TypeInt64 || v.Int64() != 100<<20 {
		t.Errorf("was: %v (want the group knob's, first in name order)", set)
	}
	if e.Knobs.SortMemory.Load() != 1<<20 || e.Knobs.GroupMemory.Load() != 2<<20 {
		t.Errorf("knobs are %d, %d", e.Knobs.SortMemory.Load(), e.Knobs.GroupMemory.Load())
	}
	for _, tc := range []struct {
		json string
		code mongoerr.Code
		msg  string
	}{
		{`{"setParameter": 1, "internalDocumentSourceGroupMaxMemoryBytes": 0}`, mongoerr.BadValue,
			"Invalid value for parameter internalDocumentSourceGroupMaxMemoryBytes: 0 is not greater than 0"},
		{`{"setParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": -1}`, mongoerr.BadValue,
			"Invalid value for parameter internalQueryMaxBlockingSortMemoryUsageBytes: -1 is not greater than or equal to 0"},
		{`{"setParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": "big"}`, mongoerr.BadValue, "Can't coerce value"},
		{`{"setParameter": 1, "internalQueryMaxBlockingSortMemoryUsageBytes": {"$numberLong": "4294967296"}}`, mongoerr.BadValue, "Can't coerce value"},
		{`{"setParameter": 1, "noSuchKnob": 1}`, mongoerr.InvalidOptions,
			"attempted to set unrecognized parameter [noSuchKnob], use help:true to see options "},
		{`{"setParameter": 1, "maxBSONDepth": 10}`, mongoerr.IllegalOperation, "not allowed to change [maxBSONDepth] at runtime"},
		{`{"setParameter": 1}`, mongoerr.InvalidOptions, "no option found to set, use help:true to see options "},
	} {
		reply := cmd(strings.TrimSuffix(tc.json, "}") + `, "$db": "admin"}`)
		code, _ := reply.Lookup("code").Int32OK()
		msg, _ := reply.Lookup("errmsg").StringValueOK()
		if mongoerr.Code(code) != tc.code || msg != tc.msg {
			t.Errorf("%s: got %d %q, want %d %q", tc.json, code, msg, tc.code, tc.msg)
		}
	}
	if e.Knobs.SortMemory.Load() != 1<<20 || e.Knobs.GroupMemory.Load() != 2<<20 {
		t.Errorf("a failed setParameter changed the knobs: %d, %d", e.Knobs.SortMemory.Load(), e.Knobs.GroupMemory.Load())
	}
	// The knobs belong to the executor: another one keeps the defaults.
	if other := New(Options{}, zap.NewNop()); other.Knobs.SortMemory.Load() != 100<<20 || other.Knobs.GroupMemory.Load() != 100<<20 {
		t.Errorf("a setParameter on one executor changed another's knobs")
	}
}
