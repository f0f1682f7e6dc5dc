package params_test

import (
	"math"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/exec/internal/streamtest"
	"github.com/cleavedb/cleave/exec/params"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// val parses one value in Extended JSON.
func val(t testing.TB, s string) bsoncore.Value {
	t.Helper()
	return streamtest.ExtDoc(t, `{"v": `+s+`}`).Lookup("v")
}

// knobNames are setParameter's names of the knobs, with each one's default.
var knobNames = []struct {
	name string
	knob func(*params.Knobs) *params.Knob
	def  int64
}{
	{"internalQueryMaxBlockingSortMemoryUsageBytes", func(k *params.Knobs) *params.Knob { return k.SortMemory }, 100 << 20},
	{"internalDocumentSourceGroupMaxMemoryBytes", func(k *params.Knobs) *params.Knob { return k.GroupMemory }, 100 << 20},
	{"internalDocumentSourceGraphLookupMaxMemoryBytes", func(k *params.Knobs) *params.Knob { return k.GraphMemory }, 100 << 20},
	{"minSnapshotHistoryWindowInSeconds", func(k *params.Knobs) *params.Knob { return k.SnapshotWindow }, 300},
	{"transactionLifetimeLimitSeconds", func(k *params.Knobs) *params.Knob { return k.TxnLifetime }, 60},
}

// TestKnobsByName checks that ByName returns each knob by setParameter's name, at its
// default, and nil for any other name.
func TestKnobsByName(t *testing.T) {
	k := params.NewKnobs()
	for _, n := range knobNames {
		got := k.ByName(n.name)
		if got == nil || got != n.knob(k) {
			t.Errorf("ByName(%q) is not its knob", n.name)
			continue
		}
		if got.Load() != n.def {
			t.Errorf("%s defaults to %d, want %d", n.name, got.Load(), n.def)
		}
	}
	for _, other := range []string{"", "transactionlifetimelimitseconds", "logLevel", "internalQueryMaxBlockingSortMemoryUsageBytes "} {
		if k.ByName(other) != nil {
			t.Errorf("ByName(%q) found a knob", other)
		}
	}
	if params.DefaultTxnLifetime != 60*time.Second {
		t.Errorf("DefaultTxnLifetime = %v", params.DefaultTxnLifetime)
	}
}

// TestKnobSet checks each knob's coercions and bounds as MongoDB's IDL parameters have
// them: whole numbers of every type, doubles and decimals truncated toward zero, the int32
// range of int knobs, the bound and its wording, and BadValue for the rest, the value
// unchanged.
func TestKnobSet(t *testing.T) {
	const sort, group, window, life = "internalQueryMaxBlockingSortMemoryUsageBytes",
		"internalDocumentSourceGroupMaxMemoryBytes", "minSnapshotHistoryWindowInSeconds", "transactionLifetimeLimitSeconds"
	for _, tc := range []struct {
		name, knob, v string
		want          int64  // the value stored when msg is ""
		msg           string // the BadValue message
	}{
		{"Int32", sort, `5`, 5, ""},
		{"Int64", sort, `{"$numberLong": "6"}`, 6, ""},
		{"DoubleTruncates", sort, `7.9`, 7, ""},
		{"NegativeDoubleTruncatesToZero", sort, `-0.5`, 0, ""},
		{"DecimalTruncates", sort, `{"$numberDecimal": "8.7"}`, 8, ""},
		{"IntBoundInclusive", sort, `0`, 0, ""},
		{"IntBelowBound", sort, `-1`, 0, "Invalid value for parameter " + sort + ": -1 is not greater than or equal to 0"},
		{"Int32Max", sort, `2147483647`, math.MaxInt32, ""},
		{"Int32Overflow", sort, `{"$numberLong": "2147483648"}`, 0, "Can't coerce value"},
		{"Int32OverflowAsDouble", sort, `2147483648.0`, 0, "Can't coerce value"},
		{"Int32Underflow", sort, `{"$numberLong": "-2147483649"}`, 0, "Can't coerce value"},
		{"NaN", sort, `{"$numberDouble": "NaN"}`, 0, "Can't coerce value"},
		{"NaNOnLongKnob", group, `{"$numberDouble": "NaN"}`, 0, "Can't coerce value"},
		{"Infinity", group, `{"$numberDouble": "Infinity"}`, 0, "Can't coerce value"},
		{"String", sort, `"big"`, 0, "Can't coerce value"},
		{"NumericString", group, `"5"`, 0, "Can't coerce value"},
		{"Bool", group, `true`, 0, "Can't coerce value"},
		{"Null", group, `null`, 0, "Can't coerce value"},
		{"LongKnobTakesInt64", group, `{"$numberLong": "4294967296"}`, 1 << 32, ""},
		{"LongKnobMax", group, `{"$numberLong": "9223372036854775807"}`, math.MaxInt64, ""},
		{"LongKnobDoubleAtTwoPow63", group, `9223372036854775808.0`, 0, "Can't coerce value"},
		{"ExclusiveBound", group, `0`, 0, "Invalid value for parameter " + group + ": 0 is not greater than 0"},
		{"ExclusiveBoundAfterTruncation", group, `0.9`, 0, "Invalid value for parameter " + group + ": 0 is not greater than 0"},
		{"ExclusiveBoundNegative", group, `-5`, 0, "Invalid value for parameter " + group + ": -5 is not greater than 0"},
		{"ExclusiveBoundOne", group, `1`, 1, ""},
		{"WindowZero", window, `0`, 0, ""},
		{"WindowNegative", window, `-3`, 0, "Invalid value for parameter " + window + ": -3 is not greater than or equal to 0"},
		{"LifetimeZero", life, `0`, 0, "Invalid value for parameter " + life + ": 0 is not greater than or equal to 1"},
		{"LifetimeOne", life, `1`, 1, ""},
		{"LifetimeHalfTruncates", life, `1.5`, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k := params.NewKnobs().ByName(tc.knob)
			before := k.Load()
			err := k.Set(tc.knob, val(t, tc.v))
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("Set(%s): %v", tc.v, err)
				}
				if k.Load() != tc.want {
					t.Fatalf("Set(%s) stored %d, want %d", tc.v, k.Load(), tc.want)
				}
				return
			}
			me := mongoerr.As(err)
			if me == nil || me.Code != mongoerr.BadValue || me.Message != tc.msg {
				t.Fatalf("Set(%s) = %v, want BadValue %q", tc.v, err, tc.msg)
			}
			if k.Load() != before {
				t.Fatalf("a refused Set changed the knob to %d", k.Load())
			}
		})
	}
}

// TestKnobAppendTo checks that int knobs report an int32 and long knobs an int64, as MongoDB
// types them in getParameter.
func TestKnobAppendTo(t *testing.T) {
	k := params.NewKnobs()
	for _, tc := range []struct {
		name string
		knob *params.Knob
		typ  bsoncore.Type
	}{
		{"SortIsInt", k.SortMemory, bsoncore.TypeInt32},
		{"GroupIsLong", k.GroupMemory, bsoncore.TypeInt64},
		{"GraphIsLong", k.GraphMemory, bsoncore.TypeInt64},
		{"WindowIsInt", k.SnapshotWindow, bsoncore.TypeInt32},
		{"LifetimeIsInt", k.TxnLifetime, bsoncore.TypeInt32},
	} {
		t.Run(tc.name, func(t *testing.T) {
			idx, doc := bsoncore.AppendDocumentStart(nil)
			doc = tc.knob.AppendTo(doc, "v")
			doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
			v := bsoncore.Document(doc).Lookup("v")
			n, _ := v.AsInt64OK()
			if v.Type != tc.typ || n != tc.knob.Load() {
				t.Fatalf("AppendTo = %v (%s), want %d as %s", v, v.Type, tc.knob.Load(), tc.typ)
			}
		})
	}
}

// TestKnobOnSet checks that OnSet's function is told each value stored, and not a refused
// one.
func TestKnobOnSet(t *testing.T) {
	k := params.NewKnobs()
	var got []int64
	k.TxnLifetime.OnSet(func(v int64) { got = append(got, v) })
	const name = "transactionLifetimeLimitSeconds"
	for _, v := range []string{`5`, `0`, `"x"`, `7.2`} {
		_ = k.TxnLifetime.Set(name, val(t, v))
	}
	if len(got) != 2 || got[0] != 5 || got[1] != 7 {
		t.Fatalf("OnSet saw %v, want [5 7]", got)
	}
	if err := k.SortMemory.Set("internalQueryMaxBlockingSortMemoryUsageBytes", val(t, `9`)); err != nil || len(got) != 2 {
		t.Fatalf("another knob's Set reached OnSet: %v, %v", err, got)
	}
}

// TestCoerceInt64 checks the coercion on its own: whole numbers as they are, the others
// truncated toward zero, and what is no number, or out of int64's range, refused.
func TestCoerceInt64(t *testing.T) {
	for _, tc := range []struct {
		name, v string
		want    int64
		ok      bool
	}{
		{"Int32", `-7`, -7, true},
		{"Int64Min", `{"$numberLong": "-9223372036854775808"}`, math.MinInt64, true},
		{"DoubleDown", `-2.9`, -2, true},
		{"DoubleMinInt64", `-9223372036854775808.0`, math.MinInt64, true},
		{"DoubleBelowMinInt64", `-1e19`, 0, false},
		{"DecimalWhole", `{"$numberDecimal": "12.00"}`, 12, true},
		{"DecimalNaN", `{"$numberDecimal": "NaN"}`, 0, false},
		{"MinusInfinity", `{"$numberDouble": "-Infinity"}`, 0, false},
		{"Document", `{}`, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := params.CoerceInt64(val(t, tc.v))
			if n != tc.want || ok != tc.ok {
				t.Fatalf("CoerceInt64(%s) = %d, %v; want %d, %v", tc.v, n, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestSlowOps checks the slow-operation settings: Init's threshold and a rate of 1, Set of
// either alone, and Slow below and at the threshold, never at rate 0 and always at rate 1.
func TestSlowOps(t *testing.T) {
	var s params.SlowOps
	s.Init(100 * time.Millisecond)
	if s.Threshold() != 100*time.Millisecond || s.SampleRate() != 1 {
		t.Fatalf("after Init: %v, %v", s.Threshold(), s.SampleRate())
	}
	if s.Slow(99*time.Millisecond) || !s.Slow(100*time.Millisecond) || !s.Slow(time.Hour) {
		t.Fatal("Slow at rate 1 does not compare with the threshold")
	}
	d := 10 * time.Millisecond
	s.Set(&d, nil)
	if s.Threshold() != d || s.SampleRate() != 1 {
		t.Fatalf("Set of the threshold alone: %v, %v", s.Threshold(), s.SampleRate())
	}
	zero := 0.0
	s.Set(nil, &zero)
	if s.Threshold() != d || s.SampleRate() != 0 {
		t.Fatalf("Set of the rate alone: %v, %v", s.Threshold(), s.SampleRate())
	}
	for range 1000 {
		if s.Slow(time.Hour) {
			t.Fatal("an operation was logged at rate 0")
		}
	}
	half, one := 0.5, 1.0
	s.Set(nil, &half)
	slow := 0
	for range 1000 {
		if s.Slow(time.Hour) {
			slow++
		}
		if s.Slow(time.Millisecond) {
			t.Fatal("an operation below the threshold was logged")
		}
	}
	if slow == 0 || slow == 1000 {
		t.Fatalf("at rate 0.5, %d of 1000 were logged", slow)
	}
	s.Set(nil, &one)
	for range 1000 {
		if !s.Slow(d) {
			t.Fatal("an operation at the threshold was not logged at rate 1")
		}
	}
}

// TestSlowOpsRecent fills the slow-operation ring past its bound: the newest come first and
// the oldest are dropped.
func TestSlowOpsRecent(t *testing.T) {
	var s params.SlowOps
	s.Init(0)
	for i := range 256 + 10 {
		s.Record(params.SlowOp{Command: "find", Duration: time.Duration(i)})
	}
	got := s.Recent()
	if len(got) != 256 {
		t.Fatalf("%d kept, want %d", len(got), 256)
	}
	for i, op := range got {
		if want := time.Duration(256 + 9 - i); op.Duration != want {
			t.Fatalf("op %d: %v, want %v", i, op.Duration, want)
		}
	}
}

// TestRWDefaultsStoreNewer: a copy of the defaults read before a change and stored after the
// change was pushed does not bring the old defaults back, while a newer one replaces them;
// either way the copy counts as current.
func TestRWDefaultsStoreNewer(t *testing.T) {
	var d params.RWDefaults
	d.StoreNewer(&params.RWConcernDefaults{UpdateOpTime: 5})
	d.StoreNewer(&params.RWConcernDefaults{UpdateOpTime: 3}) // read before the change at 5
	if got := d.Load().UpdateOpTime; got != 5 {
		t.Fatalf("after an older copy: opTime %d, want 5", got)
	}
	d.StoreNewer(&params.RWConcernDefaults{UpdateOpTime: 7})
	if got := d.Load().UpdateOpTime; got != 7 || d.LocalUpdate().IsZero() {
		t.Fatalf("after a newer copy: opTime %d, local update %v; want 7", got, d.LocalUpdate())
	}
}
