package query_test

import "testing"

// TestPlanSummary checks the planSummary of each access path, as MongoDB's logs write it.
func TestPlanSummary(t *testing.T) {
	f := newColl(t, 1, 0, docsOf(20))
	for _, tc := range []struct{ filter, want string }{
		{`{"_id": 5}`, "IDHACK"},
		{`{"a": {"$gt": 3}}`, "IXSCAN { a: 1 }"},
		{`{"b": 1, "c": {"$lt": 9}}`, "IXSCAN { b: 1, c: 1 }"},
		{`{"$or": [{"a": 1}, {"b": 2}]}`, "IXSCAN { a: 1 }, IXSCAN { b: 1, c: 1 }"},
		{`{"c": 1}`, "COLLSCAN"},
	} {
		if _, p, _ := f.open(t, tc.filter, "", 0); p.Summary() != tc.want {
			t.Errorf("%s: planSummary %q, want %q", tc.filter, p.Summary(), tc.want)
		}
	}
}
