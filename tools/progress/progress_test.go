package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLine checks the text of a bar, with and without a total.
func TestLine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n, total int64
		want     string
	}{
		{"Half", 50, 100, "db.c  [##########..........]  50/100 (50.0%)  25/s"},
		{"Done", 100, 100, "db.c  [####################]  100/100 (100.0%)  50/s"},
		{"PastTotal", 120, 100, "db.c  [####################]  120/100 (100.0%)  60/s"},
		{"Unknown", 7, -1, "db.c  7  4/s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line("db.c", tc.n, tc.total, 2*time.Second); got != tc.want {
				t.Errorf("Line = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestBarPlain checks that a bar on something that is not a terminal writes plain lines,
// no carriage returns, and its final count once when done.
func TestBarPlain(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, "db.c", 1000)
	for range 1000 {
		b.Add(1)
	}
	b.Done()
	b.Done()
	out := buf.String()
	if strings.Contains(out, "\r") || strings.Contains(out, "\x1b") {
		t.Errorf("plain output holds terminal controls: %q", out)
	}
	if n := strings.Count(out, "1000/1000 (100.0%)"); n != 1 {
		t.Errorf("the final count appears %d times, want once:\n%s", n, out)
	}
	if !strings.HasSuffix(out, "\n") {
		t.Errorf("output does not end its line: %q", out)
	}
}
