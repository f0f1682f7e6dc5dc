// Package impex is `cleave export` and `cleave import`: clients that move one collection's
// documents to and from files in mongoexport's and mongoimport's formats, through the Go
// driver.
//
// Formats (--type):
//
//	json   one Extended JSON document per line, relaxed by default (--jsonFormat canonical
//	       keeps every type exact), or one JSON array with --jsonArray: [{…},{…}]
//	csv    a header line of field names, then one row per document; export needs --fields;
//	       dotted names reach into documents and arrays ("a.b", "tags.0"); a nested
//	       document or array is written as relaxed Extended JSON. Import reads the names
//	       from --headerline or --fields, builds nested documents from dotted names, and
//	       types each value as mongoimport does: int32, int64, double, else string.
//
// Import modes (--mode): insert (documents whose _id exists are refused and reported),
// upsert (replace the document matching --upsertFields, default _id, or insert), merge
// (set the fields of the matching document, or insert). Every line that cannot be parsed
// is reported with its line number and the rest is imported; every document the server
// refuses is counted and the first ones reported.
package impex
