package ddl_test

import (
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/exec/ddl"
	"github.com/cleavedb/cleave/store"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// kinds are the create commands of the collections collMod is planned against.
var kinds = map[string]string{
	"plain":     `{"create": "c"}`,
	"clustered": `{"create": "c", "clusteredIndex": {"key": {"_id": 1}, "unique": true, "name": "byId"}, "expireAfterSeconds": 100}`,
	"capped":    `{"create": "c", "capped": true, "size": 4096, "max": 10}`,
	"ts":        `{"create": "c", "timeseries": {"timeField": "t", "granularity": "seconds"}}`,
}

// plainIndexes are the indexes of the plain collection: a TTL index, a plain one, one
// prepared for unique, a unique one, a compound one and two on the same key pattern.
var plainIndexes = []string{
	`{"key": {"a": 1}, "name": "a_1", "expireAfterSeconds": 100}`,
	`{"key": {"b": 1}, "name": "b_1"}`,
	`{"key": {"c": 1}, "name": "c_1", "prepareUnique": true}`,
	`{"key": {"u": 1}, "name": "u_1", "unique": true}`,
	`{"key": {"a": 1, "b": 1}, "name": "ab"}`,
	`{"key": {"d": 1}, "name": "d1"}`,
	`{"key": {"d": 1}, "name": "d2", "sparse": true}`,
}

// kindEnv creates db.c of kind (kinds) with its indexes (plainIndexes for "plain", b_1
// otherwise) from its create command, as create stores them.
func kindEnv(t *testing.T, kind string) *env {
	t.Helper()
	e := newEnv(t)
	opts, err := ddl.ParseCreateOptions("db.c", ext(t, kinds[kind]))
	if err != nil {
		t.Fatal(err)
	}
	var indexes []store.Index
	specs := plainIndexes
	if kind != "plain" {
		specs = []string{`{"key": {"b": 1}, "name": "b_1"}`}
	}
	for _, s := range specs {
		indexes = append(indexes, spec(t, s))
	}
	e.create(t, "", indexes...)
	if opts != nil {
		if _, err := e.cat.Store().UpdateCollection("db", "c", func(c *store.Collection) error {
			c.Options = opts
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// reply renders a plan's reply fields as "k=v, k=v".
func reply(p *ddl.CollModPlan) string {
	idx, d := bsoncore.AppendDocumentStart(nil)
	d = p.AppendReply(d)
	d, _ = bsoncore.AppendDocumentEnd(d, idx)
	elems, _ := bsoncore.Document(d).Elements()
	var parts []string
	for _, el := range elems {
		parts = append(parts, el.Key()+"="+bsonx.ShellString(el.Value()))
	}
	return strings.Join(parts, ", ")
}

// TestPlanCollMod checks collMod's plans against each kind of collection: what changes,
// what the reply reports, and MongoDB's refusals.
func TestPlanCollMod(t *testing.T) {
	envs := map[string]*env{}
	for kind := range kinds {
		envs[kind] = kindEnv(t, kind)
	}
	for _, tc := range []struct {
		name, kind, cmd string
		reply           string // the reply fields of an accepted plan
		changed         bool
		code            mongoerr.Code
		codeName, msg   string
	}{
		{"TTLChange", "plain", `{"index": {"name": "a_1", "expireAfterSeconds": 200}}`, "expireAfterSeconds_old=100, expireAfterSeconds_new=200", true, 0, "", ""},
		{"TTLSame", "plain", `{"index": {"name": "a_1", "expireAfterSeconds": 100}}`, "expireAfterSeconds_old=100, expireAfterSeconds_new=100", false, 0, "", ""},
		{"TTLAdded", "plain", `{"index": {"keyPattern": {"b": 1}, "expireAfterSeconds": 50}}`, "expireAfterSeconds_new=50", true, 0, "", ""},
		{"TTLCompound", "plain", `{"index": {"name": "ab", "expireAfterSeconds": 5}}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"TTL indexes are single-field indexes, compound indexes do not support TTL"},
		{"TTLOnID", "plain", `{"index": {"name": "_id_", "expireAfterSeconds": 5}}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"the _id field does not support TTL indexes"},
		{"TTLNegative", "plain", `{"index": {"name": "a_1", "expireAfterSeconds": -1}}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"TTL index 'expireAfterSeconds' option cannot be less than 0"},
		{"TTLTooLarge", "plain", `{"index": {"name": "a_1", "expireAfterSeconds": {"$numberLong": "2147483648"}}}`, "", false,
			mongoerr.InvalidOptions, "InvalidOptions", "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number"},
		{"HideIndex", "plain", `{"index": {"name": "b_1", "hidden": true}}`, "hidden_old=false, hidden_new=true", true, 0, "", ""},
		{"UnhideVisible", "plain", `{"index": {"name": "b_1", "hidden": false}}`, "", false, 0, "", ""},
		{"HideID", "plain", `{"index": {"name": "_id_", "hidden": true}}`, "", false, mongoerr.BadValue, "BadValue", "can't hide _id index"},
		{"UniqueUnprepared", "plain", `{"index": {"name": "b_1", "unique": true}}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first."},
		{"UniquePrepared", "plain", `{"index": {"name": "c_1", "unique": true}}`, "unique_new=true", true, 0, "", ""},
		{"UniqueAlready", "plain", `{"index": {"name": "u_1", "unique": true}}`, "", false, 0, "", ""},
		{"UniqueFalse", "plain", `{"index": {"name": "u_1", "unique": false}}`, "", false, mongoerr.BadValue, "BadValue", "Cannot make index non-unique"},
		{"PrepareUnique", "plain", `{"index": {"name": "b_1", "prepareUnique": true}}`, "prepareUnique_old=false, prepareUnique_new=true", true, 0, "", ""},
		{"PrepareUniqueOfUnique", "plain", `{"index": {"name": "u_1", "prepareUnique": true}}`, "", false, 0, "", ""},
		{"PrepareUniqueWithOther", "plain", `{"index": {"name": "b_1", "prepareUnique": true, "hidden": true}}`, "", false,
			mongoerr.InvalidOptions, "InvalidOptions", "prepareUnique cannot be combined with any other modification."},
		{"ForceNonUnique", "plain", `{"index": {"name": "u_1", "forceNonUnique": true}}`, "forceNonUnique_new=true", true, 0, "", ""},
		{"ForceNonUniqueFalse", "plain", `{"index": {"name": "u_1", "forceNonUnique": false}}`, "", false, mongoerr.BadValue, "BadValue",
			"'forceNonUnique: false' is not supported"},
		{"ForceNonUniqueID", "plain", `{"index": {"name": "_id_", "forceNonUnique": true}}`, "", false, mongoerr.BadValue, "BadValue",
			"The _id index cannot be made non-unique"},
		{"UniqueAndForce", "plain", `{"index": {"name": "u_1", "unique": true, "forceNonUnique": true}}`, "", false, mongoerr.InvalidOptions,
			"InvalidOptions", "collMod does not support 'unique' and 'forceNonUnique' options at the same time"},
		{"NameAndKeyPattern", "plain", `{"index": {"name": "b_1", "keyPattern": {"b": 1}, "hidden": true}}`, "", false,
			mongoerr.InvalidOptions, "InvalidOptions", "Cannot specify both key pattern and name."},
		{"NoTarget", "plain", `{"index": {"hidden": true}}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"Must specify either index name or key pattern."},
		{"NoChange", "plain", `{"index": {"name": "b_1"}}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"no expireAfterSeconds, hidden, unique, or prepareUnique field"},
		{"IndexNameNotFound", "plain", `{"index": {"name": "zz", "hidden": true}}`, "", false, mongoerr.IndexNotFound, "IndexNotFound",
			"cannot find index zz for ns db.c"},
		{"KeyPatternNotFound", "plain", `{"index": {"keyPattern": {"z": 1}, "hidden": true}}`, "", false, mongoerr.IndexNotFound,
			"IndexNotFound", "cannot find index "},
		{"KeyPatternAmbiguous", "plain", `{"index": {"keyPattern": {"d": 1}, "hidden": true}}`, "", false,
			mongoerr.AmbiguousIndexKeyPattern, "AmbiguousIndexKeyPattern", "matches 2 indexes, must use index name. Conflicting indexes:"},
		{"ExpireOnPlain", "plain", `{"expireAfterSeconds": 10}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"'expireAfterSeconds' option is only supported on collections clustered by _id"},
		{"ViewOnCollection", "plain", `{"viewOn": "x"}`, "", false, mongoerr.InvalidOptions, "InvalidOptions", "option only supported on a view: viewOn"},
		{"TimeseriesOnPlain", "plain", `{"timeseries": {"granularity": "minutes"}}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"option only supported on a time-series collection: timeseries"},
		{"CappedSizeOnPlain", "plain", `{"cappedSize": 1000}`, "", false, mongoerr.InvalidOptions, "InvalidOptions", "Collection must be capped."},
		{"Validator", "plain", `{"validator": {"a": {"$gt": 1}}}`, "", true, 0, "", ""},
		{"EmptyValidatorWithout", "plain", `{"validator": {}}`, "", false, 0, "", ""},
		{"ValidatorInvalid", "plain", `{"validator": {"$bogus": 1}}`, "", false, mongoerr.BadValue, "BadValue", "$bogus"},
		{"ValidationLevel", "plain", `{"validationLevel": "moderate"}`, "", true, 0, "", ""},
		{"PrePostImages", "plain", `{"changeStreamPreAndPostImages": {"enabled": true}}`, "", true, 0, "", ""},
		{"PrePostImagesOffWithout", "plain", `{"changeStreamPreAndPostImages": {"enabled": false}}`, "", false, 0, "", ""},
		{"ClusteredExpireChange", "clustered", `{"expireAfterSeconds": 3600}`, "", true, 0, "", ""},
		{"ClusteredExpireSame", "clustered", `{"expireAfterSeconds": {"$numberLong": "100"}}`, "", false, 0, "", ""},
		{"ClusteredExpireOff", "clustered", `{"expireAfterSeconds": "off"}`, "", true, 0, "", ""},
		{"ClusteredExpireOn", "clustered", `{"expireAfterSeconds": "on"}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. Got: 'on'. Accepted value is 'off'"},
		{"ClusteredExpireNegative", "clustered", `{"expireAfterSeconds": -5}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"TTL index 'expireAfterSeconds' option cannot be less than 0"},
		{"ClusteredHideIndex", "clustered", `{"index": {"name": "byId", "hidden": true}}`, "", false, mongoerr.Location6011800,
			"Location6011800", "The 'hidden' option is not supported for a clusteredIndex"},
		{"ClusteredIDNotFound", "clustered", `{"index": {"name": "_id_", "expireAfterSeconds": 5}}`, "", false, mongoerr.IndexNotFound,
			"IndexNotFound", "cannot find index _id_ for ns db.c"},
		{"CappedResize", "capped", `{"cappedSize": 1000, "cappedMax": 0}`, "", true, 0, "", ""},
		{"TimeseriesGranularity", "ts", `{"timeseries": {"granularity": "minutes"}}`, "", true, 0, "", ""},
		{"TimeseriesGranularityBack", "ts", `{"timeseries": {"granularity": "seconds"}}`, "", false, 0, "", ""},
		{"TimeseriesTTLIndex", "ts", `{"index": {"name": "b_1", "expireAfterSeconds": 5}}`, "", false, mongoerr.InvalidOptions,
			"InvalidOptions", "TTL indexes are not supported for time-series collections."},
		{"TimeseriesUnique", "ts", `{"index": {"name": "b_1", "prepareUnique": true}}`, "", false, mongoerr.InvalidOptions,
			"InvalidOptions", "Unique indexes are not supported on time-series collections"},
		{"TimeseriesValidator", "ts", `{"validator": {"a": 1}}`, "", false, mongoerr.InvalidOptions, "InvalidOptions",
			"option not supported on a time-series collection: validator"},
		{"TimeseriesExpire", "ts", `{"expireAfterSeconds": 60}`, "", true, 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := envs[tc.kind]
			a, err := ddl.ParseCollMod(ext(t, `{"collMod": "c", `+tc.cmd[1:]))
			if err != nil {
				t.Fatal(err)
			}
			c := e.coll(t)
			ci, err := e.cat.Info(c)
			if err != nil {
				t.Fatal(err)
			}
			p, err := ddl.PlanCollMod(a, c, ci)
			wantCode(t, err, tc.code, tc.codeName, tc.msg)
			if err != nil {
				return
			}
			if got := reply(p); got != tc.reply || p.Changed() != tc.changed {
				t.Errorf("reply %q changed %v, want %q %v", got, p.Changed(), tc.reply, tc.changed)
			}
		})
	}
}

// TestPlanCollModResults checks the index spec or collection options an accepted plan
// writes (shell notation).
func TestPlanCollModResults(t *testing.T) {
	envs := map[string]*env{}
	for kind := range kinds {
		envs[kind] = kindEnv(t, kind)
	}
	for _, tc := range []struct {
		name, kind, cmd string
		want            string // the new spec of the index, or the new options
	}{
		{"TTLChange", "plain", `{"index": {"name": "a_1", "expireAfterSeconds": 200}}`, "{ expireAfterSeconds: 200 }"},
		{"HideIndex", "plain", `{"index": {"name": "b_1", "hidden": true}}`, "{ hidden: true }"},
		{"UniquePrepared", "plain", `{"index": {"name": "c_1", "unique": true}}`, "{ unique: true }"},
		{"ForceNonUnique", "plain", `{"index": {"name": "u_1", "forceNonUnique": true}}`, "{}"},
		{"Validator", "plain", `{"validator": {"a": 1}}`, `{ validator: { a: 1 }, validationLevel: "strict", validationAction: "error" }`},
		{"ValidatorKeepsLevel", "plain", `{"validator": {"a": 1}, "validationLevel": "moderate"}`,
			`{ validator: { a: 1 }, validationLevel: "moderate", validationAction: "error" }`},
		{"CappedResize", "capped", `{"cappedSize": 1000, "cappedMax": 0}`, "{ capped: true, size: 1024, max: 2147483647 }"},
		{"ClusteredExpireOff", "clustered", `{"expireAfterSeconds": "off"}`,
			`{ clusteredIndex: { v: 2, key: { _id: 1 }, name: "byId", unique: true } }`},
		{"TimeseriesGranularity", "ts", `{"timeseries": {"granularity": "minutes"}}`,
			`{ timeseries: { timeField: "t", granularity: "minutes", bucketRoundingSeconds: 3600, bucketMaxSpanSeconds: 86400 } }`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := envs[tc.kind]
			a, err := ddl.ParseCollMod(ext(t, `{"collMod": "c", `+tc.cmd[1:]))
			if err != nil {
				t.Fatal(err)
			}
			c := e.coll(t)
			ci, _ := e.cat.Info(c)
			p, err := ddl.PlanCollMod(a, c, ci)
			if err != nil || !p.Changed() {
				t.Fatalf("plan %+v, %v", p, err)
			}
			var got string
			switch {
			case p.Spec != nil && *p.Spec == nil: // every option removed
				got = "{}"
			case p.Spec != nil:
				got = bsonx.ShellString(bsonx.DocValue(*p.Spec))
			default:
				got = bsonx.ShellString(bsonx.DocValue(p.Opts.Doc()))
			}
			if got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestDuplicates checks the scan of a conversion to unique: the groups of documents that
// share a key (a document holding one key twice is no duplicate), and the error listing
// them.
func TestDuplicates(t *testing.T) {
	e := newEnv(t)
	e.create(t, "", spec(t, `{"key": {"b": 1}, "name": "b_1"}`))
	e.insert(t, `{"_id": 1, "b": 1}`, `{"_id": 2, "b": 1}`, `{"_id": 3, "b": 2}`, `{"_id": 4, "b": [5, 5]}`,
		`{"_id": 5, "b": 3}`, `{"_id": 6, "b": [3, 9]}`, `{"_id": 7, "b": 3}`)
	ci, _ := e.cat.Lookup("db", "c")
	groups, truncated, err := e.x.Duplicates(ci, ci.Indexes[1])
	if err != nil || truncated {
		t.Fatalf("Duplicates: %v, truncated %v", err, truncated)
	}
	var got []string
	for _, g := range groups {
		got = append(got, bsonx.ShellString(bsonx.DocValue(g)))
	}
	if strings.Join(got, " ") != "{ ids: [ 1, 2 ] } { ids: [ 5, 6, 7 ] }" {
		t.Errorf("groups %v", got)
	}
	err = ddl.ConvertUniqueError(groups, false)
	wantCode(t, err, mongoerr.CannotConvertIndexToUnique, "CannotConvertIndexToUnique",
		"Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.")
	if v := bsonx.ShellString(bsonx.DocValue(mongoerr.As(err).Info)); v != "{ violations: [ { ids: [ 1, 2 ] }, { ids: [ 5, 6, 7 ] } ] }" {
		t.Errorf("info %s", v)
	}
	wantCode(t, ddl.ConvertUniqueError(nil, true), mongoerr.CannotConvertIndexToUnique, "CannotConvertIndexToUnique",
		"Too many conflicting documents were detected.")

	clean := newEnv(t)
	clean.create(t, "", spec(t, `{"key": {"b": 1}, "name": "b_1"}`))
	clean.insert(t, `{"_id": 1, "b": 1}`, `{"_id": 2, "b": [2, 2]}`)
	ci, _ = clean.cat.Lookup("db", "c")
	if groups, _, err := clean.x.Duplicates(ci, ci.Indexes[1]); err != nil || len(groups) != 0 {
		t.Errorf("an index without duplicates: %d groups, %v", len(groups), err)
	}
}
