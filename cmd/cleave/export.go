package main

import (
	"flag"
	"io"
	"os"
	"strings"

	"github.com/cleavedb/cleave/tools/impex"
)

// splitList splits a comma-separated flag value ("a,b"); "" is no values.
func splitList(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// runExport is `cleave export`: one collection to Extended JSON or CSV (docs/tools.md).
func runExport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cleave export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o impex.ExportOptions
	var fields, format, out string
	fs.StringVar(&o.URI, "uri", env("URI", defaultURI), "the server's connection string")
	fs.StringVar(&o.DB, "db", "", "the database")
	fs.StringVar(&o.Collection, "collection", "", "the collection")
	fs.StringVar(&o.Type, "type", "json", "json or csv")
	fs.StringVar(&fields, "fields", "", "comma-separated fields: the CSV columns, or a projection for JSON")
	fs.StringVar(&o.Query, "query", "", "export the documents this Extended JSON filter matches")
	fs.StringVar(&o.Sort, "sort", "", "an Extended JSON sort document")
	fs.Int64Var(&o.Skip, "skip", 0, "skip this many documents")
	fs.Int64Var(&o.Limit, "limit", 0, "export at most this many documents (0: all)")
	fs.BoolVar(&o.JSONArray, "jsonArray", false, "write one JSON array instead of a document per line")
	fs.StringVar(&format, "jsonFormat", "relaxed", "relaxed or canonical Extended JSON")
	fs.BoolVar(&o.NoHeaderLine, "noHeaderLine", false, "CSV without the header line")
	fs.StringVar(&out, "out", "", "the output file (default stdout)")
	if err := fs.Parse(args); err != nil {
		return exitParse(err)
	}
	if fs.NArg() > 0 || (format != "relaxed" && format != "canonical") {
		say(stderr, "cleave export: --jsonFormat is relaxed or canonical, and no arguments follow the flags\n")
		return 2
	}
	o.Fields, o.Canonical, o.Out, o.Log = splitList(fields), format == "canonical", stdout, stderr
	if out != "" && out != "-" {
		f, err := os.Create(out)
		if err != nil {
			say(stderr, "cleave export: %v\n", err)
			return 1
		}
		defer func() { _ = f.Close() }()
		o.Out = f
	}
	ctx, cancel := toolContext()
	defer cancel()
	n, err := impex.Export(ctx, o)
	if err != nil {
		say(stderr, "cleave export: %v\n", err)
		return 1
	}
	say(stderr, "exported %d record(s)\n", n)
	return 0
}

// runImport is `cleave import`: Extended JSON or CSV into one collection.
func runImport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("cleave import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o impex.ImportOptions
	var fields, upsertFields, file string
	fs.StringVar(&o.URI, "uri", env("URI", defaultURI), "the server's connection string")
	fs.StringVar(&o.DB, "db", "", "the database")
	fs.StringVar(&o.Collection, "collection", "", "the collection")
	fs.StringVar(&o.Type, "type", "json", "json or csv")
	fs.StringVar(&file, "file", "", "the input file (default stdin; or give it as the argument)")
	fs.BoolVar(&o.JSONArray, "jsonArray", false, "the input is one JSON array")
	fs.StringVar(&fields, "fields", "", "comma-separated CSV column names")
	fs.BoolVar(&o.HeaderLine, "headerline", false, "the CSV's first line names the columns")
	fs.BoolVar(&o.IgnoreBlanks, "ignoreBlanks", false, "leave empty CSV cells out of the documents")
	fs.StringVar(&o.Mode, "mode", "insert", "insert, upsert or merge")
	fs.StringVar(&upsertFields, "upsertFields", "", "comma-separated fields that match documents for upsert and merge (default _id)")
	fs.BoolVar(&o.Drop, "drop", false, "drop the collection first")
	fs.IntVar(&o.DecodingWorkers, "numDecodingWorkers", 0, "goroutines parsing JSON lines (default: one per CPU)")
	fs.IntVar(&o.InsertionWorkers, "numInsertionWorkers", 0, "batches written at once (default 4)")
	fs.IntVar(&o.InsertionWorkers, "j", 0, "short for --numInsertionWorkers")
	fs.BoolVar(&o.StopOnError, "stopOnError", false, "ordered batches: stop at the first document the server refuses")
	fs.BoolVar(&o.MaintainInsertionOrder, "maintainInsertionOrder", false, "insert in input order (one writer, ordered batches; implies --stopOnError)")
	if err := fs.Parse(args); err != nil {
		return exitParse(err)
	}
	if fs.NArg() == 1 && file == "" {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		say(stderr, "cleave import: one input file at most\n")
		return 2
	}
	o.Fields, o.UpsertFields, o.In, o.Log = splitList(fields), splitList(upsertFields), os.Stdin, stderr
	if file != "" && file != "-" {
		f, err := os.Open(file)
		if err != nil {
			say(stderr, "cleave import: %v\n", err)
			return 1
		}
		defer func() { _ = f.Close() }()
		o.In = f
	}
	ctx, cancel := toolContext()
	defer cancel()
	res, err := impex.Import(ctx, o)
	say(stdout, "%d document(s) imported successfully. %d document(s) failed to import.\n", res.Imported, res.Failed)
	if err != nil {
		say(stderr, "cleave import: %v\n", err)
		return 1
	}
	return 0
}
