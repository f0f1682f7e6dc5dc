// Command benchtable turns the result files of scripts/bench.sh into the benchmark table of
// docs/benchmarks.md: one row per workload and thread count, one column per fake server (`mbench
// limit`, plain, as a mongos, and as a mongos whose writes are synced) and one per binary label
// and shard setup, each cell the median over the rounds; under it, issue 43's ratios (the
// figures against their fair ceilings, two shards against one) with the date of the run.
// With -doc it rewrites what lies between the bench markers of that file (docs/benchmarks.md
// for `DOC=1 scripts/bench.sh`); otherwise it prints the table.
//
// Result files are named DIR/LABEL/SETUP/WORKLOAD-tTHREADS-rROUND.json (`mbench run -out`),
// SETUP being limit, mongos or mongos-sync (the fake servers), shards1 or shards2, and DIR/pebble-rROUND.json (`mbench pebble -out`).
package main

import (
	"errors"
	"flag"
	"log"
	"os"
	"strings"
)

// The markers of docs/benchmarks.md between which the generated table goes.
const (
	beginMarker = "<!-- bench:begin -->"
	endMarker   = "<!-- bench:end -->"
)

func main() {
	dir := flag.String("dir", "/tmp/cleave-bench", "directory of scripts/bench.sh's result files")
	doc := flag.String("doc", "", "rewrite the table between the bench markers of this file (docs/benchmarks.md)")
	labels := flag.String("labels", "", "the binaries' labels in the order of their columns, comma-separated (default: by name)")
	flag.Parse()
	rs, err := loadResults(*dir, strings.Split(*labels, ","))
	if err != nil {
		log.Fatal(err)
	}
	table := render(rs)
	if *doc == "" {
		_, _ = os.Stdout.WriteString(table)
		return
	}
	if err := rewrite(*doc, table); err != nil {
		log.Fatal(err)
	}
}

// rewrite replaces what lies between the bench markers of the file at path with content.
func rewrite(path, content string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(old)
	i, j := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	if i < 0 || j < i {
		return errors.New(path + ": no " + beginMarker + " ... " + endMarker + " region")
	}
	doc = doc[:i+len(beginMarker)] + "\n" + content + doc[j:]
	return os.WriteFile(path, []byte(doc), 0o644)
}
