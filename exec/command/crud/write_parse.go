package crud

import (
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/agg"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
	"github.com/cleavedb/cleave/exec/write"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// WriteArgs are the top-level arguments update and delete share.
type WriteArgs struct {
	coll      string
	ordered   bool
	let       bsoncore.Document
	wc        write.Concern
	maxTimeMS int64
	Stmts     []bsoncore.Value // the updates or deletes array's elements
	bypass    bool             // bypassDocumentValidation
	bypassTs  bool             // bypassEmptyTsReplacement (clock.FillEmptyTimestamps)
}

// UpdateStmt is one statement of an update command ({q, u, upsert, multi, ...}).
type UpdateStmt struct {
	q            bsoncore.Document
	u            bsoncore.Value
	c            bsoncore.Document // constants of a pipeline update
	upsert       bool
	multi        bool
	arrayFilters []bsoncore.Document
	hint         bsoncore.Value
	collation    bsoncore.Document
}

// DeleteStmt is one statement of a delete command ({q, limit, ...}).
type DeleteStmt struct {
	q         bsoncore.Document
	limit     int64
	hint      bsoncore.Value
	collation bsoncore.Document
}

// ParseWriteArgs parses the body of an update or delete command, whose statements are
// in the array field list ("updates" or "deletes").
func ParseWriteArgs(cmd, list string, body bsoncore.Document) (*WriteArgs, error) {
	a := &WriteArgs{ordered: true}
	first, _ := bsonx.FirstElement(body)
	name, err := args.Collection(cmd, first.Value())
	if err != nil {
		return nil, err
	}
	a.coll = name
	var stmts bsoncore.Array
	have := false
	err = args.ForEach(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case list:
			have = true
			stmts, err = args.Array(cmd, key, v)
		case "ordered":
			a.ordered, err = args.Bool(cmd, key, v)
		case "bypassDocumentValidation":
			a.bypass, err = args.Bool(cmd, key, v)
		case "bypassEmptyTsReplacement":
			a.bypassTs, err = args.Bool(cmd, key, v)
		case "let":
			a.let, err = args.Doc(cmd, key, v)
		case "stmtId", "stmtIds", "isTimeseriesNamespace", "encryptionInformation":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if !have {
		return nil, args.Missing(cmd, list)
	}
	if a.Stmts, err = stmts.Values(); err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid %s array", list)
	}
	if n := len(a.Stmts); n == 0 || n > command.MaxWriteBatchSize {
		return nil, mongoerr.New(mongoerr.InvalidLength, "Write batch sizes must be between 1 and %d. Got %d operations.", command.MaxWriteBatchSize, n)
	}
	if v, err := body.LookupErr("maxTimeMS"); err == nil {
		if a.maxTimeMS, err = command.MaxTimeMS(cmd, v); err != nil {
			return nil, err
		}
	}
	a.wc = write.ParseConcern(body)
	return a, nil
}

// stmtDoc returns statement i of list as a document, or MongoDB's IDL type error.
func stmtDoc(cmd, list string, i int, v bsoncore.Value) (bsoncore.Document, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, args.WrongType(cmd, list+"."+strconv.Itoa(i), v.Type, "object")
	}
	return d, nil
}

// ParseUpdateStmt parses statement i of an update command. Its errors are the command's
// (IDL) errors, as in MongoDB, where the whole command fails to parse.
func ParseUpdateStmt(i int, v bsoncore.Value) (*UpdateStmt, error) {
	const cmd, list = "update", "update.updates"
	d, err := stmtDoc(cmd, "updates", i, v)
	if err != nil {
		return nil, err
	}
	s := &UpdateStmt{}
	haveQ, haveU := false, false
	err = forEachField(list, d, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "q":
			haveQ = true
			s.q, err = args.Doc(list, key, v)
		case "u":
			haveU = true
			s.u, err = updateArg(v)
		case "c":
			s.c, err = args.Doc(list, key, v)
		case "upsert":
			s.upsert, err = args.Bool(list, key, v)
		case "multi":
			s.multi, err = args.Bool(list, key, v)
		case "arrayFilters":
			s.arrayFilters, err = arrayFiltersArg(list, key, v)
		case "hint":
			s.hint, err = hintArg(list, key, v)
		case "collation":
			s.collation, err = args.Doc(list, key, v)
		case "upsertSupplied":
			_, err = args.Bool(list, key, v)
		case "sampleId":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if !haveQ {
		return nil, args.Missing(list, "q")
	}
	if !haveU {
		return nil, args.Missing(list, "u")
	}
	return s, nil
}

// ParseDeleteStmt parses statement i of a delete command.
func ParseDeleteStmt(i int, v bsoncore.Value) (*DeleteStmt, error) {
	const cmd, list = "delete", "delete.deletes"
	d, err := stmtDoc(cmd, "deletes", i, v)
	if err != nil {
		return nil, err
	}
	s := &DeleteStmt{}
	haveQ, haveLimit := false, false
	err = forEachField(list, d, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "q":
			haveQ = true
			s.q, err = args.Doc(list, key, v)
		case "limit":
			haveLimit = true
			s.limit, err = args.Int64(list, key, v)
			if err == nil && s.limit != 0 && s.limit != 1 {
				err = mongoerr.New(mongoerr.FailedToParse, "The limit field in delete objects must be 0 or 1. Got %d", s.limit)
			}
		case "hint":
			s.hint, err = hintArg(list, key, v)
		case "collation":
			s.collation, err = args.Doc(list, key, v)
		case "sampleId":
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return nil, err
	}
	if !haveQ {
		return nil, args.Missing(list, "q")
	}
	if !haveLimit {
		return nil, args.Missing(list, "limit")
	}
	return s, nil
}

// forEachField calls fn for every field of a statement document (prefix is its IDL name,
// "update.updates"); fn returns false for an unknown field, which fails with MongoDB's
// IDL error 40415.
func forEachField(prefix string, d bsoncore.Document, fn func(key string, v bsoncore.Value) (bool, error)) error {
	var buf [8]bsoncore.Element // a statement's fields, without an allocation
	elems, err := bsonx.AppendElements(buf[:0], d)
	if err != nil {
		return mongoerr.New(mongoerr.InvalidBSON, "invalid statement document")
	}
	for _, el := range elems {
		if args.NullAbsent(prefix, el.Key(), el.Value()) {
			continue
		}
		known, err := fn(el.Key(), el.Value())
		if err != nil {
			return err
		}
		if !known {
			return mongoerr.New(mongoerr.Location40415, "BSON field '%s.%s' is an unknown field.", prefix, el.Key())
		}
	}
	return nil
}

// arrayFiltersArg parses arrayFilters: an array of documents.
func arrayFiltersArg(cmd, field string, v bsoncore.Value) ([]bsoncore.Document, error) {
	arr, err := args.Array(cmd, field, v)
	if err != nil {
		return nil, err
	}
	vals, err := arr.Values()
	if err != nil {
		return nil, mongoerr.New(mongoerr.InvalidBSON, "invalid arrayFilters")
	}
	out := make([]bsoncore.Document, 0, len(vals))
	for i, x := range vals {
		d, ok := x.DocumentOK()
		if !ok {
			return nil, args.WrongType(cmd, field+"."+strconv.Itoa(i), x.Type, "object")
		}
		out = append(out, d)
	}
	return out, nil
}

// hintArg accepts an index name or key pattern; an empty string or document is no hint.
func hintArg(cmd, field string, v bsoncore.Value) (bsoncore.Value, error) {
	switch v.Type {
	case bsoncore.TypeString:
		if v.StringValue() == "" {
			return bsoncore.Value{}, nil
		}
	case bsoncore.TypeEmbeddedDocument:
		if len(v.Document()) <= 5 {
			return bsoncore.Value{}, nil
		}
	default:
		return bsoncore.Value{}, args.WrongType(cmd, field, v.Type, "string", "object")
	}
	return v, nil
}

// updateArg checks the update of a statement or a findAndModify: an operator or replacement
// document, or a pipeline (UpdateModification's parser). A pipeline is lite-parsed here, as
// MongoDB does for the whole command (its authorization check reads the stages): a stage
// that is not an object of one field, or that names no stage at all, fails the command; a
// real stage that an update cannot run fails only its statement (exec/write).
func updateArg(v bsoncore.Value) (bsoncore.Value, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray {
		return v, mongoerr.New(mongoerr.FailedToParse, "Update argument must be either an object or an array")
	}
	if v.Type == bsoncore.TypeArray {
		stages, _ := v.Array().Values()
		for _, st := range stages {
			doc, ok := st.DocumentOK()
			if !ok {
				return v, mongoerr.New(mongoerr.TypeMismatch, "Each element of the 'pipeline' array must be an object")
			}
			elems, _ := doc.Elements()
			if len(elems) != 1 {
				return v, mongoerr.New(mongoerr.Location40323, "A pipeline stage specification object must contain exactly one field.")
			}
			if name := elems[0].Key(); !agg.IsStageName(name) {
				return v, mongoerr.New(mongoerr.Location40324, "Unrecognized pipeline stage name: '%s'", name)
			}
		}
	}
	return v, nil
}
