package impex

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cleavedb/cleave/tools/conn"
	"github.com/cleavedb/cleave/tools/progress"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// ExportOptions are `cleave export`'s settings, named after mongoexport's flags.
type ExportOptions struct {
	URI, DB, Collection string   // --uri, --db, --collection
	Type                string   // --type: "json" (default) or "csv"
	Fields              []string // --fields: the CSV columns; for JSON, a projection
	Query               string   // --query: an Extended JSON filter
	Sort                string   // --sort: an Extended JSON sort document
	Skip, Limit         int64    // --skip, --limit
	JSONArray           bool     // --jsonArray
	Canonical           bool     // --jsonFormat=canonical
	NoHeaderLine        bool     // --noHeaderLine (CSV)
	Out                 io.Writer
	Log                 io.Writer // progress (nil: none)
}

// Export writes the documents o selects to o.Out and returns how many it wrote.
func Export(ctx context.Context, o ExportOptions) (int64, error) {
	if o.DB == "" || o.Collection == "" {
		return 0, errors.New("--db and --collection are required")
	}
	if o.Type == "csv" && len(o.Fields) == 0 {
		return 0, errors.New("CSV export needs --fields")
	}
	if o.Type != "" && o.Type != "json" && o.Type != "csv" {
		return 0, fmt.Errorf("--type %q: json or csv", o.Type)
	}
	find, err := findOptions(o)
	if err != nil {
		return 0, err
	}
	filter, err := extJSONDoc("--query", o.Query)
	if err != nil {
		return 0, err
	}
	c, err := conn.Connect(ctx, o.URI)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.Disconnect(context.WithoutCancel(ctx)) }()
	cur, err := c.Database(o.DB).Collection(o.Collection).Find(ctx, filter, find)
	if err != nil {
		return 0, fmt.Errorf("find on %s.%s: %w", o.DB, o.Collection, err)
	}
	defer func() { _ = cur.Close(ctx) }()
	bar := progress.New(logOrDiscard(o.Log), o.DB+"."+o.Collection, exportTotal(ctx, c, o))
	defer bar.Done()
	bw := bufio.NewWriterSize(o.Out, 1<<20)
	var n int64
	if o.Type == "csv" {
		n, err = exportCSV(ctx, cur, o, bw, bar)
	} else {
		n, err = exportJSON(ctx, cur, o, bw, bar)
	}
	if err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// exportTotal is how many documents an export writes, when that is known without a scan
// (no --query or --skip): the collection's count, at most --limit; -1 otherwise.
func exportTotal(ctx context.Context, c *mongo.Client, o ExportOptions) int64 {
	if o.Query != "" || o.Skip > 0 {
		return -1
	}
	n, err := c.Database(o.DB).Collection(o.Collection).EstimatedDocumentCount(ctx)
	if err != nil {
		return -1
	}
	if o.Limit > 0 {
		n = min(n, o.Limit)
	}
	return n
}

// logOrDiscard is w, or io.Discard when nil.
func logOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// findOptions turns --fields, --sort, --skip and --limit into find options.
func findOptions(o ExportOptions) (*options.FindOptionsBuilder, error) {
	find := options.Find().SetSkip(o.Skip).SetLimit(o.Limit)
	if len(o.Fields) > 0 {
		proj := bson.D{}
		for _, f := range o.Fields {
			proj = append(proj, bson.E{Key: f, Value: 1})
		}
		find.SetProjection(proj)
	}
	if o.Sort != "" {
		sort, err := extJSONDoc("--sort", o.Sort)
		if err != nil {
			return nil, err
		}
		find.SetSort(sort)
	}
	return find, nil
}

// extJSONDoc parses a flag's Extended JSON document; "" is the empty document.
func extJSONDoc(flag, s string) (bson.D, error) {
	d := bson.D{}
	if strings.TrimSpace(s) == "" {
		return d, nil
	}
	if err := bson.UnmarshalExtJSON([]byte(s), false, &d); err != nil {
		return nil, fmt.Errorf("%s is not an Extended JSON document: %w", flag, err)
	}
	return d, nil
}

// exportJSON writes one document per line, or a JSON array.
func exportJSON(ctx context.Context, cur *mongo.Cursor, o ExportOptions, w *bufio.Writer, bar *progress.Bar) (int64, error) {
	var n int64
	if o.JSONArray {
		_ = w.WriteByte('[')
	}
	for cur.Next(ctx) {
		js, err := bson.MarshalExtJSON(cur.Current, o.Canonical, false)
		if err != nil {
			return n, fmt.Errorf("document %d: %w", n, err)
		}
		if o.JSONArray && n > 0 {
			_ = w.WriteByte(',')
		}
		if _, err := w.Write(js); err != nil {
			return n, err
		}
		if !o.JSONArray {
			_ = w.WriteByte('\n')
		}
		n++
		bar.Add(1)
	}
	if o.JSONArray {
		_, _ = w.WriteString("]\n")
	}
	return n, cur.Err()
}

// exportCSV writes the header line (unless NoHeaderLine) and one row per document.
func exportCSV(ctx context.Context, cur *mongo.Cursor, o ExportOptions, w io.Writer, bar *progress.Bar) (int64, error) {
	cw := csv.NewWriter(w)
	if !o.NoHeaderLine {
		if err := cw.Write(o.Fields); err != nil {
			return 0, err
		}
	}
	var n int64
	row := make([]string, len(o.Fields))
	for cur.Next(ctx) {
		for i, f := range o.Fields {
			row[i] = csvCell(lookupPath(cur.Current, f))
		}
		if err := cw.Write(row); err != nil {
			return n, err
		}
		n++
		bar.Add(1)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return n, err
	}
	return n, cur.Err()
}
