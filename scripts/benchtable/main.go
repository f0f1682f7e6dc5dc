// Command benchtable turns the result files of scripts/bench.sh into the README's benchmark
// table: one row per workload and thread count, one column for the fake server (`mbench
// limit`) and one per binary label and shard setup, each cell the median over the rounds.
// With -readme it rewrites what lies between the bench markers of that file; otherwise it
// prints the table.
//
// Result files are named DIR/LABEL/SETUP/WORKLOAD-tTHREADS-rROUND.json (`mbench run -out`),
// SETUP being limit, shards1 or shards2, and DIR/pebble-rROUND.json (`mbench pebble -out`).
package main

import (
	"errors"
	"flag"
	"log"
	"os"
	"strings"
)

// The README markers between which the generated table goes.
const (
	beginMarker = "<!-- bench:begin -->"
	endMarker   = "<!-- bench:end -->"
)

func main() {
	dir := flag.String("dir", "/tmp/cleave-bench", "directory of scripts/bench.sh's result files")
	readme := flag.String("readme", "", "rewrite the table between the bench markers of this file")
	labels := flag.String("labels", "", "the binaries' labels in the order of their columns, comma-separated (default: by name)")
	flag.Parse()
	rs, err := loadResults(*dir, strings.Split(*labels, ","))
	if err != nil {
		log.Fatal(err)
	}
	table := render(rs)
	if *readme == "" {
		_, _ = os.Stdout.WriteString(table)
		return
	}
	if err := rewrite(*readme, table); err != nil {
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
