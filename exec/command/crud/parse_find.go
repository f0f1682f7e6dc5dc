package crud

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/args"
	"github.com/cleavedb/cleave/exec/command"
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
	allowDiskUseSet bool // allowDiskUse given: else allowDiskUseByDefault decides (diskUse)
	noCursorTimeout bool
	returnKey       bool
	showRecordID    bool
	min, max        bsoncore.Document
	maxTimeMS       int64
	// tailable and awaitData ask for a tailable cursor on a capped collection (tail.go).
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
			a.filter, err = args.OptionalDoc(cmd, key, v)
		case "sort":
			a.sort, err = args.OptionalDoc(cmd, key, v)
		case "projection":
			a.projection, err = args.OptionalDoc(cmd, key, v)
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
			a.allowDiskUseSet = v.Type != bsoncore.TypeNull
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
		if a.maxTimeMS, err = command.MaxTimeMS(cmd, maxTime); err != nil {
			return err
		}
	}
	return checkTailable(a)
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
