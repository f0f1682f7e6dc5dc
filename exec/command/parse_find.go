package command

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// findArgs are the parsed arguments of a find command.
type findArgs struct {
	coll            string
	filter          bsoncore.Document
	sort            bsoncore.Document
	projection      bsoncore.Document
	hint            bsoncore.Value
	skip            int64
	limit           int64 // 0 = none
	batchSize       int64 // -1 = default (101 for the first batch)
	singleBatch     bool
	let             bsoncore.Document
	collation       bsoncore.Document
	allowDiskUse    bool
	noCursorTimeout bool
	returnKey       bool
	showRecordID    bool
	min, max        bsoncore.Document
	maxTimeMS       int64
	// tailable and awaitData ask for a tailable cursor on a capped collection (cmd_tail.go).
	tailable, awaitData bool
}

// parseFindInto parses a find command body into a, which is zero (find allocates it with
// its query and cursor).
func parseFindInto(body bsoncore.Document, a *findArgs) error {
	const cmd = "find"
	a.batchSize = -1
	first, _ := bsonx.FirstElement(body)
	coll, err := args.Collection(cmd, first.Value())
	if err != nil {
		return err
	}
	a.coll = coll
	maxTime, err := args.ForEachMaxTime(cmd, body, func(key string, v bsoncore.Value) (bool, error) {
		var err error
		switch key {
		case "filter":
			a.filter, err = OptionalDoc(cmd, key, v)
		case "sort":
			a.sort, err = OptionalDoc(cmd, key, v)
		case "projection":
			a.projection, err = OptionalDoc(cmd, key, v)
		case "hint":
			a.hint = v
		case "skip":
			a.skip, err = nonNegative(cmd, key, v)
		case "limit":
			a.limit, err = nonNegative(cmd, key, v)
		case "batchSize":
			a.batchSize, err = nonNegative(cmd, key, v)
		case "singleBatch":
			a.singleBatch, err = args.OptionalBool(key, v)
		case "let":
			a.let, err = args.Doc(cmd, key, v)
		case "collation":
			a.collation, err = args.Doc(cmd, key, v)
		case "allowDiskUse":
			a.allowDiskUse, err = args.OptionalBool(key, v)
		case "noCursorTimeout":
			a.noCursorTimeout, err = args.OptionalBool(key, v)
		case "returnKey":
			a.returnKey, err = args.OptionalBool(key, v)
		case "showRecordId":
			a.showRecordID, err = args.OptionalBool(key, v)
		case "min":
			a.min, err = args.Doc(cmd, key, v)
		case "max":
			a.max, err = args.Doc(cmd, key, v)
		case "oplogReplay", "$_resumeAfter", "term":
			_, err = args.Bool(cmd, key, v)
		case "tailable":
			a.tailable, err = args.OptionalBool(key, v)
		case "awaitData":
			a.awaitData, err = args.OptionalBool(key, v)
		case "allowPartialResults", "readOnce", "allowSpeculativeMajorityRead", "$_requestResumeToken":
			_, err = args.OptionalBool(key, v)
		default:
			return false, nil
		}
		return true, err
	})
	if err != nil {
		return err
	}
	if maxTime.Type != 0 {
		if a.maxTimeMS, err = maxTimeMS(cmd, maxTime); err != nil {
			return err
		}
	}
	return checkTailable(a)
}

// optionalDoc returns a document argument; null counts as absent, as drivers sometimes send it.
func OptionalDoc(cmd, field string, v bsoncore.Value) (bsoncore.Document, error) {
	if v.Type == bsoncore.TypeNull {
		return nil, nil
	}
	return args.Doc(cmd, field, v)
}

// nonNegative parses an integral argument that must be >= 0 (MongoDB's IDL validator).
func nonNegative(cmd, field string, v bsoncore.Value) (int64, error) {
	n, err := args.Int64(cmd, field, v)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, mongoerr.New(mongoerr.Location51024, "BSON field '%s' value must be >= 0, actual value '%d'", field, n)
	}
	return n, nil
}

// maxTimeMS parses the generic maxTimeMS argument of command cmd: a non-negative 32-bit
// integer. As MongoDB 7.0: a non-number is the IDL's TypeMismatch, null, a value out of
// range (checked on the truncated value first) or a fraction are BadValue.
func maxTimeMS(cmd string, v bsoncore.Value) (int64, error) {
	switch v.Type {
	case bsoncore.TypeNull:
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS must be a number")
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
	default:
		return 0, args.WrongType(cmd, "maxTimeMS", v.Type, args.NumberTypes...)
	}
	n, err := args.Int64(cmd, "maxTimeMS", v)
	if err != nil {
		return 0, err
	}
	if n < 0 || n > math.MaxInt32 {
		return 0, mongoerr.New(mongoerr.BadValue, "%d value for maxTimeMS is out of range", n)
	}
	if f, ok := v.DoubleOK(); ok && f != math.Trunc(f) {
		return 0, mongoerr.New(mongoerr.BadValue, "maxTimeMS has non-integral value")
	}
	return n, nil
}
