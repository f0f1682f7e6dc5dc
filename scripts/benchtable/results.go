package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// run is the part of an `mbench run -out` file the table shows.
type run struct {
	Workload string `json:"workload"`
	Threads  int    `json:"threads"`
	Date     string `json:"date"` // RFC 3339, when the run started
	Total    struct {
		OpsPerSec  float64          `json:"ops_per_s"`
		DocsPerSec float64          `json:"docs_per_s"`
		P99Us      float64          `json:"p99_us"`
		Ops        int64            `json:"ops"`
		Errors     map[string]int64 `json:"errors"`
	} `json:"total"`
	Server *struct {
		CPUUsPerOp float64 `json:"cpu_us_per_op"`
		RSSMaxKB   float64 `json:"rss_max_kb"`
	} `json:"server"`
	HostCPU *struct {
		OtherCores float64 `json:"other_cores"`
	} `json:"host_cpu"`
}

// phase is one phase of an `mbench pebble -out` file.
type phase struct {
	Name      string  `json:"name"`
	RecPerSec float64 `json:"records_per_s"`
}

// key names a row: a workload at a number of client threads.
type key struct {
	workload string
	threads  int
}

// column names a column: a binary's label and a shard setup (shards1, shards2), or one of
// the fake servers (fakeSetups) with no label.
type column struct{ label, setup string }

// fakeSetups are the setups of the fake servers (`mbench limit`), in the order of their
// columns: the plain one (answering as a standalone mongod), the one answering as a mongos
// (-mongos), and that one making every write durable first (-mongos -sync-dir).
var fakeSetups = []string{"limit", "mongos", "mongos-sync"}

// results holds every round of every (row, column), and the pebble ingest rounds.
type results struct {
	runs    map[key]map[column][]run
	columns []column
	pebble  []float64 // records/s of the batched, unsynced ingest
	// pebbleSustained: the same ingest of as many records as an insert run writes
	// (pebble-sustained-rROUND.json), long enough to flush and compact as the insert does.
	pebbleSustained []float64
}

var runName = regexp.MustCompile(`^([a-z]+)-t(\d+)-r\d+\.json$`)

// loadResults reads every result file under dir; the columns of the labels in order come
// first, in that order, the others by name.
func loadResults(dir string, order []string) (*results, error) {
	rs := &results{runs: map[key]map[column][]run{}}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		m := runName.FindStringSubmatch(filepath.Base(f))
		if m == nil {
			continue
		}
		var r run
		if err := readJSON(f, &r); err != nil {
			return nil, err
		}
		threads, _ := strconv.Atoi(m[2])
		k := key{m[1], threads}
		c := column{filepath.Base(filepath.Dir(filepath.Dir(f))), filepath.Base(filepath.Dir(f))}
		if slices.Contains(fakeSetups, c.setup) {
			c.label = ""
		}
		if rs.runs[k] == nil {
			rs.runs[k] = map[column][]run{}
		}
		rs.runs[k][c] = append(rs.runs[k][c], r)
		if !slices.Contains(rs.columns, c) {
			rs.columns = append(rs.columns, c)
		}
	}
	slices.SortFunc(rs.columns, func(a, b column) int {
		if c := strings.Compare(setupOrder(a.setup), setupOrder(b.setup)); c != 0 {
			return c
		}
		ai, bi := slices.Index(order, a.label), slices.Index(order, b.label)
		if ai < 0 {
			ai = len(order)
		}
		if bi < 0 {
			bi = len(order)
		}
		return cmp.Or(cmp.Compare(ai, bi), strings.Compare(a.label, b.label))
	})
	if rs.pebble, err = loadIngest(filepath.Join(dir, "pebble-r*.json")); err != nil {
		return nil, err
	}
	if rs.pebbleSustained, err = loadIngest(filepath.Join(dir, "pebble-sustained-r*.json")); err != nil {
		return nil, err
	}
	if len(rs.runs) == 0 {
		return nil, fmt.Errorf("no result files under %s", dir)
	}
	return rs, nil
}

// loadIngest returns the records/s of the batched ingest phase of every `mbench pebble -out`
// file matching pattern.
func loadIngest(pattern string) ([]float64, error) {
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, f := range files {
		var ps []phase
		if err := readJSON(f, &ps); err != nil {
			return nil, err
		}
		for _, p := range ps {
			if strings.HasPrefix(p.Name, "insert batch") {
				out = append(out, p.RecPerSec)
				break
			}
		}
	}
	return out, nil
}

// setupOrder sorts the fake servers first (in fakeSetups' order), then one shard, then two.
func setupOrder(setup string) string {
	if i := slices.Index(fakeSetups, setup); i >= 0 {
		return "0" + strconv.Itoa(i)
	}
	return setup
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
