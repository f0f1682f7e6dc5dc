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
//     reply at all when the request set moreToCome;
//   - for every frame that decodes without error, Message.AppendTo gives back the same bytes
//     (FuzzReadMessage checks it).
//
// What closes a connection and what is answered follows MongoDB 7.0. Closed, with a Warn
// line (conn_id, peer, request_id, reason): a messageLength outside [16, MaxMessageSize], a
// truncated frame, an opcode other than OP_MSG, OP_QUERY and OP_COMPRESSED (OP_INSERT and
// the other legacy opcodes included), a section or sequence size that overruns the message,
// an unknown required OP_MSG flag (IllegalOpMsgFlag), a checksum mismatch, more than two
// document sequences (TooManyDocumentSequences: MongoDB's limit), and an OP_COMPRESSED whose
// size, compressor or body is wrong. Answered, the connection kept: invalid BSON (22),
// nesting deeper than MaxNesting (Overflow, 15), a document over MaxBSONInternalSize
// (BSONObjectTooLarge, 10334), a missing or second body (40587, 40430), an unknown section
// kind (40432), a duplicate sequence (40431) or a sequence that repeats a body field (40433),
// "$db" in an OP_QUERY command (40621), and an OP_QUERY on anything but "<db>.$cmd" (an
// OP_REPLY with QueryFailure and {$err, code: 5739101}, as MongoDB 6+ answers).
//
// Pipelined connections: a handler that is a Forker may set Request.Concurrent on a request
// (the internal client between nodes asks for it after authenticating); from the next
// request on, that connection's goroutine only reads frames, the requests run at once on
// workers (each with a handler from Fork), and the replies go out as they finish, matched
// by responseTo, several in one write when they finish together (pipeline.go); a handler
// that is also an Inliner names the brief requests the reading goroutine runs itself, with
// no hand-off to a worker (a point read). Each request's context is its own, ended by a
// cancel message or the connection's end, and given to the handler (Request.Cancel). Client is
// that internal client: a few connections per server, each carrying many requests in flight
// (client.go, clientconn.go).
//
// Memory: each connection holds a ReadBufferSize bufio.Reader (8 KiB) and its goroutine.
// A request that fits the buffer is decoded in place; a larger one, a decompressed one, a
// merged body and every reply use buffers borrowed from a size-classed pool for the duration
// of one request. Request.Body therefore aliases memory that the next request reuses.
//
// Usage:
//
//	srv := wire.NewServer(wire.ServerOptions{MaxConns: 1000}, handler, logger)
//	go srv.Serve(ln)
//	...
//	srv.Shutdown(ctx) // stop accepting, finish in-flight requests, close connections
//
// Building and reading frames, as tests and tools do:
//
//	frame := wire.AppendOpMsg(nil, 1, 0, 0, cmd)            // OP_MSG {cmd}
//	z, _ := wire.AppendCompressed(nil, wire.CompressorZstd, frame)
//	msg, err := wire.ReadMessage(bufio.NewReader(conn), wire.MaxMessageSize)
package wire
