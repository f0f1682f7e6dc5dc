package shard

// Cost is the work one operation did on one partition, as the execution layer measured it.
// RU turns it into request units. Fields are counts, never negative.
type Cost struct {
	// DocsRead counts documents fetched by key: point reads, and the read of a document
	// before it is updated or deleted.
	DocsRead int64
	// BytesRead is the size of the documents counted in DocsRead.
	BytesRead int64
	// DocsExamined counts documents a scan loaded and tested against a filter.
	DocsExamined int64
	// KeysExamined counts index entries a scan visited.
	KeysExamined int64
	// BytesReturned is the size of the scan's results handed to the client (or to the merge
	// stage): projected documents, or the group/count output.
	BytesReturned int64
	// DocsWritten counts documents inserted, replaced, updated or deleted.
	DocsWritten int64
	// BytesWritten is the size of the new versions written; 0 for a delete.
	BytesWritten int64
	// IndexKeysWritten counts index entries inserted or removed, the _id index's included.
	IndexKeysWritten int64
}

// The request-unit model, calibrated on Cosmos DB's published figures: reading a 1 KiB
// document by key costs 1 RU, reading a 100 KiB one about 10 RU; inserting a 1 KiB document
// with default indexing (the _id index: one index key) costs 5.5 RU, a 100 KiB one about 55 RU;
// every further index entry costs more. So:
//
//	RU = 1.0·DocsRead + 0.1·max(0, KiB(BytesRead) − DocsRead)        point reads
//	   + 4.5·DocsWritten + 0.5·KiB(BytesWritten) + 0.5·IndexKeysWritten  writes
//	   + 0.05·DocsExamined + 0.01·KeysExamined + 0.2·KiB(BytesReturned)  scans
//
// and at least MinRU. A point read pays for a seek and for the first KiB of its document (the
// block it sits in); each further KiB is a sequential read, a tenth of that. A written
// document pays the WAL record and the memtable insert (4.5) plus its bytes (0.5/KiB, written
// again by compactions), and each index entry 0.5. A scan pays per document it decodes and
// tests (a twentieth of a point read: no seek), per index entry (smaller still) and per KiB it
// ships (encoding and transfer). Examples:
//
//	1 KiB point read                       1.0 RU
//	1 KiB insert, _id index only           5.5 RU
//	1 KiB insert, _id + 2 secondary        6.5 RU
//	query: 1,000 keys, 1,000 docs, 100 KiB 10 + 50 + 20 = 80 RU
const (
	RUPerDocRead      = 1.0  // a document fetched by key, its first KiB included
	RUPerReadKiB      = 0.1  // each further KiB of a document fetched by key
	RUPerDocWritten   = 4.5  // a document inserted, replaced, updated or deleted
	RUPerWrittenKiB   = 0.5  // each KiB of a new document version
	RUPerIndexKey     = 0.5  // an index entry inserted or removed
	RUPerDocExamined  = 0.05 // a document a scan decoded and tested
	RUPerKeyExamined  = 0.01 // an index entry a scan visited
	RUPerReturnedKiB  = 0.2  // each KiB a scan returned
	MinRU             = 1.0  // the least one operation on one partition costs, as in Cosmos DB
	bytesPerKiB       = 1024.0
	readsIncludingKiB = 1 // KiB of each point-read document covered by RUPerDocRead
)

// RU returns the request units c costs, by the model above: never less than MinRU, so an
// operation that found nothing still pays for the lookup. The charge of a request that touched
// several partitions is the sum over its partitions.
func (c Cost) RU() float64 {
	readKiB := float64(c.BytesRead) / bytesPerKiB
	extraKiB := max(0, readKiB-readsIncludingKiB*float64(c.DocsRead))
	ru := RUPerDocRead*float64(c.DocsRead) + RUPerReadKiB*extraKiB +
		RUPerDocWritten*float64(c.DocsWritten) +
		RUPerWrittenKiB*float64(c.BytesWritten)/bytesPerKiB +
		RUPerIndexKey*float64(c.IndexKeysWritten) +
		RUPerDocExamined*float64(c.DocsExamined) +
		RUPerKeyExamined*float64(c.KeysExamined) +
		RUPerReturnedKiB*float64(c.BytesReturned)/bytesPerKiB
	return max(ru, MinRU)
}

// Add accumulates o into c, for an operation that reports its work in steps.
func (c *Cost) Add(o Cost) {
	c.DocsRead += o.DocsRead
	c.BytesRead += o.BytesRead
	c.DocsExamined += o.DocsExamined
	c.KeysExamined += o.KeysExamined
	c.BytesReturned += o.BytesReturned
	c.DocsWritten += o.DocsWritten
	c.BytesWritten += o.BytesWritten
	c.IndexKeysWritten += o.IndexKeysWritten
}
