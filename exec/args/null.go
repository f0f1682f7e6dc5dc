package args

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// nullAbsent lists, by command (the cmd ForEach is given), the optional fields that MongoDB's
// IDL parser treats as absent when they are null or undefined (IDLParserContext::
// checkAndAssertType returns false for them instead of failing): {create: "c", capped: true,
// size: 4096, max: null} creates a capped collection without a max. Fields whose parser is
// not the IDL's (or whose null means something) are not listed and keep their own rules;
// required fields are not listed either.
var nullAbsent = func() map[string]map[string]bool {
	writes := []string{"ordered", "bypassDocumentValidation", "bypassEmptyTsReplacement", "let"}
	lists := map[string][]string{
		// NB: find's, aggregate's and findAndModify's optionalBool fields (singleBatch,
		// allowDiskUse, noCursorTimeout, new, upsert…) have their own parser, which refuses null.
		"find":           {"filter", "sort", "projection", "skip", "limit", "batchSize", "let", "collation", "min", "max"},
		"aggregate":      {"cursor", "let", "collation"},
		"count":          {"query", "skip", "limit", "collation", "fields"},
		"distinct":       {"query", "collation"},
		"getMore":        {"batchSize", "term", "lastKnownCommittedOpTime"},
		"insert":         writes,
		"update":         writes,
		"delete":         writes,
		"update.updates": {"c", "upsert", "multi", "arrayFilters", "collation", "upsertSupplied"},
		"delete.deletes": {"collation"},
		"findAndModify":  {"query", "sort", "fields", "collation", "let", "arrayFilters"},
		"create": {"capped", "size", "max", "autoIndexId", "temp", "flags", "validator", "validationLevel",
			"validationAction", "storageEngine", "indexOptionDefaults", "idIndex", "changeStreamPreAndPostImages",
			"collation", "viewOn", "pipeline", "clusteredIndex", "expireAfterSeconds", "timeseries"},
		"collMod": {"index", "validator", "changeStreamPreAndPostImages", "timeseries", "validationLevel",
			"validationAction", "expireAfterSeconds", "viewOn", "pipeline", "cappedSize", "cappedMax", "dryRun"},
		"createIndexes":    {"ignoreUnknownIndexOptions", "commitQuorum"},
		"listCollections":  {"filter", "nameOnly", "authorizedCollections", "includePendingDrops", "cursor"},
		"listDatabases":    {"filter", "nameOnly", "authorizedDatabases"},
		"listIndexes":      {"cursor", "includeBuildUUIDs", "includeIndexBuildInfo"},
		"renameCollection": {"dropTarget", "stayTemp"},
		"validate":         {"full", "checkBSONConformance", "repair", "background", "metadata", "enforceFastCount", "fixMultikey"},
		"explain":          {"verbosity"},
		"shardCollection": {"unique", "numInitialChunks", "presplitHashedZones", "collation", "timeseries",
			"implicitlyCreateIndex", "enforceUniquenessCheck"},
		"compact": {"force", "dryRun", "freeSpaceTargetMB"},
	}
	m := make(map[string]map[string]bool, len(lists))
	for cmd, fields := range lists {
		m[cmd] = make(map[string]bool, len(fields))
		for _, f := range fields {
			m[cmd][f] = true
		}
	}
	return m
}()

// NullAbsent reports whether field of command cmd, set to v, counts as absent: v is null
// or undefined and the field is one of cmd's optional IDL fields (nullAbsent).
func NullAbsent(cmd, field string, v bsoncore.Value) bool {
	return (v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined) && nullAbsent[cmd][field]
}
