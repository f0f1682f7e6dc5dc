// Package pitr replays a server's change log onto another server, up to a point in time:
// what `cleave restore --until` does after it laid out a backup, so that the restored data
// equals the data at that point.
//
// The log is read as any client reads it, through a cluster-wide change stream with
// showExpandedEvents opened at the backup's cluster time (startAtOperationTime: the events
// of the writes the backup does not hold), and each event becomes the command that makes
// the same change, as mongorestore's --oplogReplay applies oplog entries:
//
//	insert            insert of fullDocument
//	replace           replace of the documentKey's document by fullDocument
//	update            update of the documentKey's document: truncatedArrays as $push with
//	                  $each [] and $slice, then updatedFields as $set, removedFields as $unset
//	delete            delete of the documentKey's document
//	create            create with operationDescription (idIndex and the options; a view's
//	                  viewOn, pipeline and collation)
//	createIndexes     createIndexes with operationDescription.indexes
//	dropIndexes       dropIndexes of those indexes' names
//	modify            collMod with operationDescription
//	shardCollection   shardCollection with operationDescription.shardKey
//	drop, rename, dropDatabase   the same command (rename with dropTarget when it had one)
//
// The document writes of consecutive events on one collection go as one ordered bulk write
// (up to 1000): the same writes in the same order, in one round trip and commit instead of
// one each. Every write must change exactly one document; one that does not (a document missing, a
// duplicate _id) stops the replay with an error, since the target then does not hold what
// the source held at that time. A transaction's events share its commit's cluster time, so
// a point in time holds all of a transaction or none of it; they are applied one by one.
//
// The point is a cluster time (events at or before it are applied) or a wall-clock time
// (events whose wallTime is at or before it). The replay ends at the first event after the
// point, or once the stream's postBatchResumeToken (whose _data starts with the cluster time,
// as MongoDB's tokens do) is past the point with no event left before it.
//
// Not replayed: a path in updatedFields that disambiguatedPaths lists as holding a field name
// with a dot (no $set can name it) stops the replay with an error.
package pitr
