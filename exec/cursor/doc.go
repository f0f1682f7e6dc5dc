// Package cursor holds open query results between getMores: the registry of a server's
// cursors (random ids, one getMore at a time per cursor, the idle timeout, closing with the
// session they were opened in), and the batching of a cursor's documents into replies
// within the 16 MiB bound and the server's memory account (a batch reserves its documents
// from the reply's stream.Reservation and ends early once the account is spent, after at
// least one document). A cursor owns its stream and whatever the query pinned
// (snapshots, iterators) until it is exhausted, killed or times out; one that reads the
// present (Cursor.Yields: not a snapshot read or a transaction) gives them up after each
// batch (Cursor.Yield, stream.Yielder), and its next batch reads the data as it is then; a
// long batch gives them up inside itself too, every 1,000 documents or 10 ms (stream.YieldPolicy).
package cursor
