// Package dump is `cleave dump` and `cleave load`: clients that copy collections out of a
// running server into mongodump's layout and back, through the Go driver, so that a dump
// made here restores with mongorestore and a mongodump's output loads here.
//
// The layout, as mongodump writes it:
//
//	<out>/<db>/<coll>.bson            the documents, back to back (.bson.gz with --gzip)
//	<out>/<db>/<coll>.metadata.json   {options, indexes, uuid, collectionName, type} in canonical
//	                                  Extended JSON (.metadata.json.gz with --gzip); views have
//	                                  only this file, with type "view"
//	<archive>                         the same in one stream (tools/archive), gzipped whole
//	                                  with --gzip
//
// File names are the collection's name query-escaped (mongodump's url.QueryEscape); the
// metadata's collectionName is the truth when it is there. Cleave adds one field,
// shardKey (the shardCollection key), which mongorestore ignores and Load re-applies: a
// collection is created with its options, sharded, filled, then indexed, and views come
// last, once what they read exists.
//
// What is not dumped: the local, config and admin databases unless named (users and roles
// are not copied), system.* collections other than system.js, and the oplog (--oplog).
package dump
