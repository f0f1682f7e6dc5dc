package pitr

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// TestParsePoint reads the forms --until takes, and refuses the rest.
func TestParsePoint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ts   uint64
		wall string
		bad  bool
	}{
		{in: "Timestamp(1714550400, 12)", ts: 1714550400<<32 | 12},
		{in: "Timestamp(1714550400,12)", ts: 1714550400<<32 | 12},
		{in: "1714550400:12", ts: 1714550400<<32 | 12},
		{in: "2024-05-01T08:00:00Z", wall: "2024-05-01T08:00:00Z"},
		{in: "2024-05-01T10:00:00.5+02:00", wall: "2024-05-01T08:00:00.5Z"},
		{in: "yesterday", bad: true},
		{in: "Timestamp(99999999999, 1)", bad: true},
	} {
		p, err := ParsePoint(tc.in)
		switch {
		case tc.bad:
			if err == nil {
				t.Errorf("%q: %v, want an error", tc.in, p)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.wall != "" && p.String() != tc.wall, tc.wall == "" && p.TS != tc.ts:
			t.Errorf("%q: %+v (%s), want ts %d wall %s", tc.in, p, p, tc.ts, tc.wall)
		}
	}
}

// TestTokenTime reads the cluster time a resume token starts with.
func TestTokenTime(t *testing.T) {
	tok := must(bson.Marshal(bson.D{{Key: "_data", Value: "826A1B2C3D0000000700000001000000FF00"}}))
	ts, ok := tokenTime(tok)
	if !ok || ts != 0x6A1B2C3D<<32|7 {
		t.Errorf("tokenTime = %x, %v; want Timestamp(0x6A1B2C3D, 7)", ts, ok)
	}
	if _, ok := tokenTime(must(bson.Marshal(bson.D{{Key: "_data", Value: "01"}}))); ok {
		t.Error("a token of another shape read as a time")
	}
}

// TestUpdateModels turns updateDescriptions into writes: a truncation before the $set and
// $unset, none for an update that changed nothing, a refusal for a dotted field name.
func TestUpdateModels(t *testing.T) {
	key := must(bson.Marshal(bson.D{{Key: "_id", Value: 1}}))
	ev := &event{DocumentKey: key}
	ev.Update.Updated = must(bson.Marshal(bson.D{{Key: "a.1", Value: 5}}))
	ev.Update.Removed = []string{"b"}
	ev.Update.Truncated = append(ev.Update.Truncated, struct {
		Field   string `bson:"field"`
		NewSize int32  `bson:"newSize"`
	}{"a", 2})
	models, err := updateModels(ev)
	if err != nil || len(models) != 2 {
		t.Fatalf("updateModels: %d models, %v; want a $push then a $set and $unset", len(models), err)
	}
	none := &event{DocumentKey: key}
	none.Update.Updated = must(bson.Marshal(bson.D{}))
	if models, err := updateModels(none); err != nil || len(models) != 0 {
		t.Errorf("an update that changed nothing: %d models, %v", len(models), err)
	}
	dotted := &event{DocumentKey: key}
	dotted.Update.Updated = must(bson.Marshal(bson.D{{Key: "a.b", Value: 1}}))
	dotted.Update.Ambiguous = must(bson.Marshal(bson.D{{Key: "a.b", Value: bson.A{"a.b"}}}))
	if _, err := updateModels(dotted); err == nil {
		t.Error("a field name with a dot: no error")
	}
}

// must returns b, failing on err.
func must(b []byte, err error) bson.Raw {
	if err != nil {
		panic(err)
	}
	return b
}
