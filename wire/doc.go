// Package wire owns the bytes on the socket: the 16-byte message header, OP_MSG (flags,
// checksum, body and document-sequence sections), OP_QUERY/OP_REPLY for legacy handshakes,
// OP_COMPRESSED (snappy, zlib, zstd), size limits checked before allocating, and the
// accept → read → handle → write loop. It calls a Handler and knows nothing of commands,
// shards or storage.
//
// Invariants:
//   - no frame larger than MaxMessageSize is read into memory; a frame whose lengths are
//     inconsistent closes the connection (with a log line), since the stream cannot resync;
//   - a request whose body or a sequence document is invalid BSON is answered with
//     InvalidBSON (22) and the connection stays open;
//   - a reply mirrors its request: OP_REPLY for OP_QUERY, OP_MSG for OP_MSG, compressed with
//     the request's compressor, with a CRC-32C checksum when the request carried one, and no
//     reply at all when the request set moreToCome.
//
// Usage:
//
//	srv := wire.NewServer(wire.ServerOptions{MaxConns: 1000}, handler, logger)
//	go srv.Serve(ln)
//	...
//	srv.Shutdown(ctx) // stop accepting, finish in-flight requests, close connections
package wire
