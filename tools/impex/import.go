package impex

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/cleavedb/cleave/tools/conn"
	"github.com/cleavedb/cleave/tools/progress"
	"go.mongodb.org/mongo-driver/v2/bson"
)

// maxLine bounds one line of a JSON import: a 16 MiB document in canonical Extended JSON
// takes a few times its size.
const maxLine = 64 << 20

// ImportOptions are `cleave import`'s settings, named after mongoimport's flags.
type ImportOptions struct {
	URI, DB, Collection string    // --uri, --db, --collection
	Type                string    // --type: "json" (default) or "csv"
	In                  io.Reader // the --file's contents, or stdin
	JSONArray           bool      // --jsonArray
	Fields              []string  // --fields: the CSV columns (unless HeaderLine)
	HeaderLine          bool      // --headerline: the CSV's first line names the columns
	IgnoreBlanks        bool      // --ignoreBlanks: leave empty CSV cells out
	Mode                string    // --mode: "insert" (default), "upsert" or "merge"
	UpsertFields        []string  // --upsertFields: the match of upsert and merge (default _id)
	Drop                bool      // --drop: drop the collection first
	Log                 io.Writer // rejected lines and refused documents
	// DecodingWorkers parse JSON lines at once (--numDecodingWorkers; default GOMAXPROCS).
	DecodingWorkers int
	// InsertionWorkers send batches at once (--numInsertionWorkers; default 4).
	InsertionWorkers int
	// StopOnError writes ordered batches and stops at the first refused document.
	StopOnError bool
	// MaintainInsertionOrder writes in input order: one writer, ordered batches, stopping at
	// the first refused document, as mongoimport's --maintainInsertionOrder.
	MaintainInsertionOrder bool
}

// defaultInsertionWorkers is --numInsertionWorkers' default: enough batches in flight to
// keep every shard of a small cluster busy while the next batches are parsed.
const defaultInsertionWorkers = 4

// ImportResult counts an import's documents.
type ImportResult struct {
	Imported int64 // written (inserted, replaced, merged or upserted)
	Failed   int64 // unparsable lines plus documents the server refused
}

// Import reads o.In and writes its documents into o.DB.o.Collection.
func Import(ctx context.Context, o ImportOptions) (ImportResult, error) {
	if err := checkImport(&o); err != nil {
		return ImportResult{}, err
	}
	c, err := conn.Connect(ctx, o.URI)
	if err != nil {
		return ImportResult{}, err
	}
	defer func() { _ = c.Disconnect(context.WithoutCancel(ctx)) }()
	coll := c.Database(o.DB).Collection(o.Collection)
	if o.Drop {
		if err := coll.Drop(ctx); err != nil {
			return ImportResult{}, fmt.Errorf("drop %s.%s: %w", o.DB, o.Collection, err)
		}
	}
	// An input does not say how many documents it holds: the bar counts them.
	bar := progress.New(logOrDiscard(o.Log), o.DB+"."+o.Collection, -1)
	defer bar.Done()
	w := newWriter(ctx, coll, o, bar)
	switch {
	case o.Type == "csv":
		err = readCSV(o, w.add, w.reject)
	case o.JSONArray:
		err = readJSONArray(o.In, w.add, w.reject)
	default:
		err = readJSONLines(o.In, o.DecodingWorkers, w.add, w.reject)
	}
	res, werr := w.close()
	if werr != nil {
		err = werr
	}
	return res, err
}

// checkImport validates o and fills its defaults.
func checkImport(o *ImportOptions) error {
	if o.DB == "" || o.Collection == "" {
		return errors.New("--db and --collection are required")
	}
	switch o.Type {
	case "", "json":
		o.Type = "json"
	case "csv":
		if !o.HeaderLine && len(o.Fields) == 0 {
			return errors.New("CSV import needs --headerline or --fields")
		}
		if o.HeaderLine && len(o.Fields) > 0 {
			return errors.New("--headerline and --fields: give one")
		}
	default:
		return fmt.Errorf("--type %q: json or csv", o.Type)
	}
	switch o.Mode {
	case "":
		o.Mode = "insert"
	case "insert", "upsert", "merge":
	default:
		return fmt.Errorf("--mode %q: insert, upsert or merge", o.Mode)
	}
	if len(o.UpsertFields) > 0 && o.Mode == "insert" {
		return errors.New("--upsertFields needs --mode upsert or merge")
	}
	if len(o.UpsertFields) == 0 {
		o.UpsertFields = []string{"_id"}
	}
	if o.DecodingWorkers <= 0 {
		o.DecodingWorkers = runtime.GOMAXPROCS(0)
	}
	if o.InsertionWorkers <= 0 {
		o.InsertionWorkers = defaultInsertionWorkers
	}
	if o.MaintainInsertionOrder {
		o.StopOnError, o.InsertionWorkers = true, 1
	}
	return nil
}

// readJSONArray reads one JSON array of Extended JSON documents; an element that is no
// document is rejected with its line and the rest are read.
func readJSONArray(r io.Reader, add func(int, bson.Raw) error, reject func(int, error)) error {
	lr := &lineCounter{r: r, line: 1}
	dec := json.NewDecoder(lr)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return fmt.Errorf("--jsonArray: the input does not start with '[': %v", orToken(err, tok))
	}
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return fmt.Errorf("line %d: not JSON, nothing after it was read: %w", lr.lineAt(dec.InputOffset()), err)
		}
		// The element starts as many lines above its end as it holds newlines.
		line := lr.lineAt(dec.InputOffset()) - bytes.Count(raw, []byte{'\n'})
		d, err := parseDoc(nil, bytes.TrimSpace(raw))
		if err != nil {
			reject(line, err)
			continue
		}
		if err := add(line, d); err != nil {
			return err
		}
	}
	return nil
}

// orToken says what an array's first token was instead.
func orToken(err error, tok json.Token) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("found %v", tok)
}

// lineCounter counts the newlines of what it has read, so an offset maps to a line.
type lineCounter struct {
	r       io.Reader
	line    int
	read    int64
	newline []int64 // offsets of the newlines read
}

// Read passes reads through, noting newlines.
func (l *lineCounter) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i, b := range p[:n] {
		if b == '\n' {
			l.newline = append(l.newline, l.read+int64(i))
		}
	}
	l.read += int64(n)
	return n, err
}

// lineAt is the line of the byte just before offset.
func (l *lineCounter) lineAt(offset int64) int {
	line := 1
	for _, nl := range l.newline {
		if nl < offset-1 {
			line++
		}
	}
	return line
}

// readCSV reads CSV rows into documents, named by the header line or --fields.
func readCSV(o ImportOptions, add func(int, bson.Raw) error, reject func(int, error)) error {
	cr := csv.NewReader(o.In)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	fields := o.Fields
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		line, _ := cr.FieldPos(0)
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			reject(pe.StartLine, err)
			continue
		} else if err != nil {
			return err
		}
		if fields == nil {
			fields = append([]string(nil), rec...)
			continue
		}
		d, err := csvDoc(fields, rec, o.IgnoreBlanks)
		var raw bson.Raw
		if err == nil {
			raw, err = bson.Marshal(d)
		}
		if err != nil {
			reject(line, err)
			continue
		}
		if err := add(line, raw); err != nil {
			return err
		}
	}
}

// csvDoc builds the document of one CSV row.
func csvDoc(fields, rec []string, ignoreBlanks bool) (bson.D, error) {
	if len(rec) > len(fields) {
		return nil, fmt.Errorf("%d values for %d fields", len(rec), len(fields))
	}
	d := bson.D{}
	for i, v := range rec {
		if v == "" && ignoreBlanks {
			continue
		}
		d = setPath(d, fields[i], autoParse(v))
	}
	return d, nil
}

// say prints a line to w, if any.
func say(w io.Writer, format string, args ...any) {
	if w != nil {
		_, _ = fmt.Fprintf(w, format, args...)
	}
}
