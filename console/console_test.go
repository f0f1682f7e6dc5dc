package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// fixedSource is a Source of fixed state: the pages' rendering is tested on it, the data
// behind it in the integration suite (console_test.go there).
type fixedSource struct {
	auth  bool
	ready error
}

func (fixedSource) Databases() []Database {
	return []Database{{Name: "app", Collections: []CollectionSummary{{Name: "telemetry", ShardKey: `{"deviceId": "hashed"}`, Partitions: 2},
		{Name: "odd/name?#", Partitions: 1}}}}
}

func (fixedSource) Collection(db, name string) (Collection, bool) {
	if db == "app" && name == "odd/name?#" {
		return Collection{DB: db, Name: name, Partitions: []Partition{{ID: 1, Min: "MinKey", Max: "MaxKey", Shard: "shard-0"}}}, true
	}
	if db != "app" || name != "telemetry" {
		return Collection{}, false
	}
	return Collection{DB: db, Name: name, ShardKey: `{"deviceId": "hashed"}`, Throughput: 20000, Partitions: []Partition{
		{ID: 1, Min: "MinKey", Max: "0", Shard: "shard-0", Documents: 10, Bytes: 2048, RUPerSec: 3},
		{ID: 2, Min: "0", Max: "MaxKey", Shard: "shard-1", ShardIndex: 1, Documents: 990, Bytes: 204800, RUPerSec: 300, Throttled: 4},
	}, HotKeys: []HotKey{{Partition: 2, Key: `"dev-1"`, Share: 0.9, RUPerSec: 270, SingleKey: true, Reason: "load"}}}, true
}

func (fixedSource) Manager() Manager { return Manager{Shards: 2, Splits: 1} }
func (fixedSource) Events() []Event {
	return []Event{{Time: time.Now().Add(-time.Second), Kind: "split", NS: "app.telemetry", Detail: "0 into 1, 2 (size)"}}
}
func (fixedSource) Nodes() []Node { return nil }
func (fixedSource) SlowOps() []SlowOp {
	return []SlowOp{{Time: time.Now(), Command: "find", NS: "app.telemetry", Duration: 150 * time.Millisecond, RU: 12.5}}
}
func (s fixedSource) Ready() error      { return s.ready }
func (s fixedSource) AuthEnabled() bool { return s.auth }
func (fixedSource) Authorize(user, password string) (known, allowed bool) {
	known = password == "pw" && (user == "ada" || user == "bob")
	return known, known && user == "ada"
}

// get serves one request of the console over src.
func get(t *testing.T, src Source, path string, user ...string) (int, string) {
	t.Helper()
	mux := http.NewServeMux()
	New(src, zap.NewNop()).Register(mux)
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if len(user) == 2 {
		req.SetBasicAuth(user[0], user[1])
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// TestConsolePages renders every page: each answers 200 and shows what it is for.
func TestConsolePages(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		html       bool
	}{
		{"/", "app.telemetry", true},
		{"/collections/app/telemetry", `class="bar" data-partition="2" data-shard="shard-1"`, true},
		{"/nodes", "A single node", true},
		{"/", `href="/collections/app/odd%2Fname%3F%23"`, true},
		{"/collections/app/odd%2Fname%3F%23", "<h1>app.odd/name?#</h1>", true},
		{"/slow", "app.telemetry", true},
		{"/healthz", "ok", false},
		{"/readyz", "ready", false},
	} {
		code, body := get(t, fixedSource{}, tc.path)
		if code != http.StatusOK || !strings.Contains(body, tc.want) || (tc.html && !strings.Contains(body, "</html>")) {
			t.Errorf("GET %s: %d, want 200 with %q:\n%s", tc.path, code, tc.want, body)
		}
	}
	if code, _ := get(t, fixedSource{}, "/collections/app/nope"); code != http.StatusNotFound {
		t.Errorf("a missing collection: %d, want 404", code)
	}
}

// TestConsoleCollectionChart checks the storage chart: one bar per partition, in order,
// its height proportional to the partition's bytes, coloured by shard.
func TestConsoleCollectionChart(t *testing.T) {
	src := fixedSource{}
	coll, _ := src.Collection("app", "telemetry")
	c := newBarChart("bytes", "", coll.Partitions, func(p *Partition) float64 { return float64(p.Bytes) }, formatBytes)
	if len(c.Bars) != 2 {
		t.Fatalf("%d bars, want 2", len(c.Bars))
	}
	small, big := c.Bars[0], c.Bars[1]
	if small.Partition != 1 || big.Partition != 2 || small.Fill == big.Fill {
		t.Errorf("bars %+v %+v: want partitions 1 and 2 in two colours", small, big)
	}
	if r := big.H / small.H; r < 90 || r > 110 {
		t.Errorf("heights %.1f and %.1f: ratio %.1f, want about 100 (204800 / 2048)", big.H, small.H, r)
	}
}

// TestConsoleAuth checks that with access control on the pages want credentials and the
// probes do not.
func TestConsoleAuth(t *testing.T) {
	src := fixedSource{auth: true}
	if code, _ := get(t, src, "/"); code != http.StatusUnauthorized {
		t.Errorf("no credentials: %d, want 401", code)
	}
	if code, _ := get(t, src, "/", "ada", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("a wrong password: %d, want 401", code)
	}
	if code, _ := get(t, src, "/", "bob", "pw"); code != http.StatusForbidden {
		t.Errorf("a user without the privileges: %d, want 403", code)
	}
	if code, _ := get(t, src, "/", "ada", "pw"); code != http.StatusOK {
		t.Errorf("the right password: %d, want 200", code)
	}
	if code, _ := get(t, src, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d, want 200 without credentials", code)
	}
}
