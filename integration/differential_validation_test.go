package integration

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The validation part of the differential test: the same $jsonSchema validator on an
// unsharded collection and on one sharded like the read test's, the same generated writes
// on both, and the same replies and final contents required.

// diffValidatorSchema is the validator: the generated documents break it often (status
// booleans, metricValue strings, decimals and arrays, counters that $inc carries past int32).
var diffValidatorSchema = bson.D{{Key: "$jsonSchema", Value: bson.D{
	{Key: "bsonType", Value: "object"},
	{Key: "required", Value: bson.A{"seq", "status"}},
	{Key: "properties", Value: bson.D{
		{Key: "seq", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: int32(0)}}},
		{Key: "metricValue", Value: bson.D{{Key: "bsonType", Value: bson.A{"double", "int", "long", "null"}}}},
		{Key: "status", Value: bson.D{{Key: "enum", Value: bson.A{"ok", "warn", "fail"}}}},
		{Key: "tags", Value: bson.D{{Key: "bsonType", Value: "array"}, {Key: "maxItems", Value: int32(3)},
			{Key: "items", Value: bson.D{{Key: "bsonType", Value: "string"}}}}},
		{Key: "location", Value: bson.D{{Key: "bsonType", Value: bson.A{"object", "null"}}, {Key: "required", Value: bson.A{"site"}},
			{Key: "properties", Value: bson.D{{Key: "floor", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "maximum", Value: int32(7)}}}}}}},
		{Key: "counter", Value: bson.D{{Key: "bsonType", Value: "int"}}},
	}},
}}}

// diffValidationPhases are the validation settings the writes run under, in turn.
var diffValidationPhases = []struct{ level, action string }{{"strict", "error"}, {"moderate", "error"}, {"strict", "warn"}}

// diffValidationOps is the number of generated writes per phase.
const diffValidationOps = 80

// diffValidator applies generated writes to both collections.
type diffValidator struct {
	t              *testing.T
	r              *rand.Rand
	db             *mongo.Database
	plain, sharded string
	ids            []any // the _ids of the documents inserted so far, failed inserts included
	next           int   // the next document number
	warn           bool  // the phase's validationAction is warn
	failures       int
	ops            map[string]int
	violations     int // writes that answered DocumentValidationFailure
}

// checkValidation creates the validated collections, runs the phases' writes on both and
// compares every reply and the final contents.
func checkValidation(t *testing.T, c *mongo.Client, db *mongo.Database, seed uint64) {
	t.Helper()
	checkValidationVia(t, c, db, seed)
}

// checkValidationVia is checkValidation creating and sharding the collections through
// client c, and writing and reading them through db (another node in cluster mode).
func checkValidationVia(t *testing.T, c *mongo.Client, db *mongo.Database, seed uint64) {
	t.Helper()
	v := &diffValidator{t: t, r: rand.New(rand.NewPCG(seed, 0x7a11d)), db: db, plain: "vplain", sharded: "vsharded", ops: map[string]int{}}
	for _, name := range []string{v.plain, v.sharded} {
		cmd := bson.D{{Key: "create", Value: name}, {Key: "validator", Value: diffValidatorSchema},
			{Key: "validationLevel", Value: "strict"}, {Key: "validationAction", Value: "error"}}
		if err := c.Database(db.Name()).RunCommand(t.Context(), cmd).Err(); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	shardColl(t, c, db.Name()+"."+v.sharded, "deviceId", bson.E{Key: "numInitialChunks", Value: 16})
	// Documents already there, valid or not, for moderate to tell apart.
	for range 20 {
		docs := v.newDocs(5)
		v.compare("initial insert", func(coll string) bson.D { return v.insert(coll, docs, true, true) })
	}
	for _, p := range diffValidationPhases {
		v.warn = p.action == "warn"
		for _, name := range []string{v.plain, v.sharded} {
			cmd := bson.D{{Key: "collMod", Value: name}, {Key: "validationLevel", Value: p.level}, {Key: "validationAction", Value: p.action}}
			if err := db.RunCommand(t.Context(), cmd).Err(); err != nil {
				t.Fatalf("collMod %s: %v", name, err)
			}
		}
		for i := range diffValidationOps {
			v.step(fmt.Sprintf("%s/%s #%d", p.level, p.action, i))
		}
	}
	v.compareContents()
	t.Logf("validation: %v; %d DocumentValidationFailure replies, alike", v.ops, v.violations)
}

// step generates one write and applies it to both collections.
func (v *diffValidator) step(label string) {
	bypass := v.r.IntN(5) == 0
	switch p := v.r.IntN(10); {
	case p < 3:
		docs, ordered := v.newDocs(1+v.r.IntN(3)), v.r.IntN(2) == 0
		v.compare(label+" insert", func(coll string) bson.D { return v.insert(coll, docs, ordered, bypass) })
	case p < 5:
		filter, _ := v.target()
		update := v.opUpdate()
		v.compare(label+" update", func(coll string) bson.D {
			return v.withBypass(bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: filter}, {Key: "u", Value: update}}}}}, bypass)
		})
	case p < 6:
		// A multi-update stops at the first document it fails on, and which one comes first
		// depends on the layout: it only runs where neither validation nor the update can fail.
		lo := int32(v.r.IntN(max(v.next, 1)))
		filter := bson.D{{Key: "seq", Value: bson.D{{Key: "$gte", Value: lo}, {Key: "$lt", Value: lo + 15}}}}
		update := v.opUpdate()
		for diffMayFail(update) {
			update = v.opUpdate()
		}
		v.compare(label+" updateMany", func(coll string) bson.D {
			return v.withBypass(bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: filter}, {Key: "u", Value: update}, {Key: "multi", Value: true}}}}}, bypass || !v.warn)
		})
	case p < 8:
		filter, dev := v.target()
		repl := v.replacement(dev)
		v.compare(label+" replace", func(coll string) bson.D {
			return v.withBypass(bson.D{{Key: "update", Value: coll}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: filter}, {Key: "u", Value: repl}}}}}, bypass)
		})
	default:
		filter, dev := v.target()
		var update any = v.opUpdate()
		if v.r.IntN(3) == 0 {
			update = v.replacement(dev)
		}
		returnNew := v.r.IntN(2) == 0
		v.compare(label+" findAndModify", func(coll string) bson.D {
			return v.withBypass(bson.D{{Key: "findAndModify", Value: coll}, {Key: "query", Value: filter}, {Key: "update", Value: update}, {Key: "new", Value: returnNew}}, bypass)
		})
	}
}

// diffMayFail reports whether update fails on some documents: $push onto a tags string, or
// $set of location.floor where location is null.
func diffMayFail(update bson.D) bool {
	for _, e := range update {
		if e.Key == "$push" || e.Key == "$set" && e.Value.(bson.D)[0].Key == "location.floor" {
			return true
		}
	}
	return false
}

// withBypass adds bypassDocumentValidation to cmd when bypass is true.
func (v *diffValidator) withBypass(cmd bson.D, bypass bool) bson.D {
	if bypass {
		cmd = append(cmd, bson.E{Key: "bypassDocumentValidation", Value: true})
	}
	return cmd
}

// newDocs returns n new documents, noting their _ids.
func (v *diffValidator) newDocs(n int) bson.A {
	docs := bson.A{}
	for range n {
		d := diffDoc(v.r, v.next)
		v.next++
		v.ids = append(v.ids, d[0].Value)
		docs = append(docs, d)
	}
	return docs
}

// insert returns an insert of docs into coll.
func (v *diffValidator) insert(coll string, docs bson.A, ordered, bypass bool) bson.D {
	return v.withBypass(bson.D{{Key: "insert", Value: coll}, {Key: "documents", Value: docs}, {Key: "ordered", Value: ordered}}, bypass)
}

// target returns the filter of a single-document write, {_id, deviceId} (the shard key, as
// a sharded single write wants it), and the document's deviceId (bson.E{} when missing). The
// document may not exist: its insert may have failed.
func (v *diffValidator) target() (bson.D, bson.E) {
	if len(v.ids) == 0 {
		return bson.D{{Key: "_id", Value: "none"}}, bson.E{}
	}
	id := v.ids[v.r.IntN(len(v.ids))]
	var doc bson.D
	err := v.db.Collection(v.plain).FindOne(v.t.Context(), bson.D{{Key: "_id", Value: id}}).Decode(&doc)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		v.t.Fatalf("read %v: %v", id, err)
	}
	for _, e := range doc {
		if e.Key == "deviceId" {
			return bson.D{{Key: "_id", Value: id}, e}, e
		}
	}
	return bson.D{{Key: "_id", Value: id}, {Key: "deviceId", Value: nil}}, bson.E{}
}

// opUpdate returns an update with operators, valid or not.
func (v *diffValidator) opUpdate() bson.D {
	switch v.r.IntN(7) {
	case 0:
		return bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: diffOneOf[any](&diffGen{v.r}, "ok", "warn", true, "bad")}}}, {Key: "$inc", Value: bson.D{{Key: "counter", Value: int32(1)}}}}
	case 1:
		return bson.D{{Key: "$set", Value: bson.D{{Key: "metricValue", Value: diffOneOf[any](&diffGen{v.r}, 1.5, "str", nil, int32(3), bson.A{})}}}}
	case 2:
		return bson.D{{Key: "$unset", Value: bson.D{{Key: diffOneOf(&diffGen{v.r}, "seq", "tags", "note", "status"), Value: ""}}}}
	case 3:
		return bson.D{{Key: "$push", Value: bson.D{{Key: "tags", Value: diffOneOf[any](&diffGen{v.r}, "red", int32(1))}}}}
	case 4:
		return bson.D{{Key: "$set", Value: bson.D{{Key: "location.floor", Value: diffNumber(v.r, int64(v.r.IntN(10)))}}}}
	case 5:
		return bson.D{{Key: "$inc", Value: bson.D{{Key: "counter", Value: int32(1 << 30)}}}}
	default:
		return bson.D{{Key: "$set", Value: bson.D{{Key: "status", Value: "ok"}, {Key: "metricValue", Value: int32(v.r.IntN(100))}}}}
	}
}

// replacement returns a replacement document with deviceId dev (none when dev is empty):
// a replacement keeps the shard key.
func (v *diffValidator) replacement(dev bson.E) bson.D {
	d := diffDoc(v.r, v.r.IntN(max(v.next, 1)))[1:] // no _id
	out := bson.D{}
	for _, e := range d {
		if e.Key != "deviceId" {
			out = append(out, e)
		}
	}
	if dev.Key != "" {
		out = append(out, dev)
	}
	return out
}

// compare runs cmd on both collections and requires the same reply.
func (v *diffValidator) compare(label string, cmd func(coll string) bson.D) {
	v.t.Helper()
	v.ops[label[len(label)-len(lastWord(label)):]]++
	a, b := v.reply(cmd(v.plain)), v.reply(cmd(v.sharded))
	if bytes.Contains(a, []byte("Document failed validation")) {
		v.violations++
	}
	if bytes.Equal(a, b) {
		return
	}
	v.failures++
	v.t.Errorf("validated write %s differs:\n  unsharded: %s\n  sharded:   %s\n  command: %s", label, clipText(a.String()), clipText(b.String()), diffExtJSON(cmd(v.sharded)))
	if v.failures == 10 {
		v.t.Fatal("stopping after 10 differences in validated writes")
	}
}

// lastWord returns the text after s's last space.
func lastWord(s string) string { return s[strings.LastIndexByte(s, ' ')+1:] }

// diffExtJSON renders v as canonical Extended JSON.
func diffExtJSON(v any) string {
	b, err := bson.MarshalExtJSON(v, true, false)
	if err != nil {
		return err.Error()
	}
	return clipText(string(b))
}

// diffVolatileReplyFields are the reply fields that differ from one command to the next.
var diffVolatileReplyFields = map[string]bool{"$clusterTime": true, "operationTime": true, "electionId": true, "opTime": true}

// reply runs cmd and returns its reply, an error reply included, without the volatile fields.
func (v *diffValidator) reply(cmd bson.D) bson.Raw {
	raw, err := v.db.RunCommand(v.t.Context(), cmd).Raw()
	if err != nil {
		var ce mongo.CommandError
		var we mongo.WriteException
		switch {
		case errors.As(err, &ce) && ce.Raw != nil:
			raw = ce.Raw
		case errors.As(err, &we) && we.Raw != nil:
			raw = we.Raw
		default:
			v.t.Fatalf("%s: %v", diffExtJSON(cmd), err)
		}
	}
	elems, err := raw.Elements()
	if err != nil {
		v.t.Fatalf("reply %v: %v", raw, err)
	}
	var out []byte
	for _, e := range elems {
		if !diffVolatileReplyFields[e.Key()] {
			out = append(out, e...)
		}
	}
	return bson.Raw(bsoncore.BuildDocument(nil, out))
}

// compareContents requires the same final documents in both collections.
func (v *diffValidator) compareContents() {
	v.t.Helper()
	read := func(name string) []bsoncore.Document {
		cur, err := v.db.Collection(name).Find(v.t.Context(), bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: int32(1)}}))
		if err != nil {
			v.t.Fatalf("read %s: %v", name, err)
		}
		var docs []bsoncore.Document
		for cur.Next(v.t.Context()) {
			docs = append(docs, bsoncore.Document(append([]byte(nil), cur.Current...)))
		}
		if err := cur.Err(); err != nil {
			v.t.Fatalf("read %s: %v", name, err)
		}
		return docs
	}
	a, b := read(v.plain), read(v.sharded)
	if !sameBytes(a, b, true) {
		v.t.Errorf("validated collections differ at the end: %s", diffResults(a, b, orderedShape()))
	}
	v.t.Logf("validation: %d documents at the end", len(a))
}
