// Package cursor holds open query results between getMores: the registry of a server's
// cursors (random ids, one getMore at a time per cursor, the idle timeout, closing with the
// session they were opened in), and the batching of a cursor's documents into replies
// within the 16 MiB bound. A cursor owns its stream and whatever the query pinned
// (snapshots, iterators) until it is exhausted, killed or times out.
package cursor
