package wire

import (
	"context"
	"net"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ConnInfo describes one accepted connection to the Handler.
type ConnInfo struct {
	ID     int64    // 1, 2, 3, ... in accept order; MongoDB's connectionId
	Remote net.Addr // the client's address
	Local  net.Addr // our address, as the client reached it
}

// Handler creates one ConnHandler per accepted connection.
type Handler interface {
	// Connect is called once when a connection is accepted, before its first request.
	Connect(info ConnInfo) ConnHandler
}

// ConnHandler answers the requests of one connection, one at a time, in order.
type ConnHandler interface {
	// Handle answers one decoded request; it never sees sockets or frames. A non-nil error
	// means the connection is unusable and gets closed; MongoDB-level failures travel inside
	// reply as {ok: 0, ...}. Exactly one of reply and err is non-nil. reply must stay valid
	// until the next call to Handle or Close.
	Handle(ctx context.Context, req *Request) (reply bsoncore.Document, err error)
	// Close is called once when the connection ends, after its last Handle returned.
	Close()
}

// Forker is a ConnHandler whose connection can be pipelined (Request.Concurrent): Fork
// returns another handler of the same connection, sharing what the connection established
// (its authentication) but not its per-request state, which runs one request at a time as
// ConnHandler says. The forks are closed when the connection ends, before the handler
// itself.
type Forker interface {
	ConnHandler
	Fork() ConnHandler
}

// Inliner is a Forker that names the requests of its pipelined connection to run on the
// goroutine reading the connection rather than on a worker: those that are brief and never
// wait for another request (a point read). The hand-off to a worker makes a goroutine ready
// and, on a node idle between requests, wakes a thread for it; a request run in line pays
// neither, but the connection reads nothing else until it returns (a cancel message
// included). Inline gets the body of an OP_MSG's request, not validated yet (it must read
// it with bounds checks: bsoncore's lookups).
type Inliner interface {
	Forker
	Inline(body []byte) bool
}

// Request is one decoded client message, whatever its opcode.
type Request struct {
	RequestID int32 // the client's requestID from the header; logs name it request_id
	// Body is the command document. For OP_MSG it holds the kind-0 section with every
	// kind-1 document sequence appended as an array field named by the sequence's identifier
	// (MongoDB treats the two forms alike). For OP_QUERY on "<db>.$cmd" it is the query
	// document, with a "$query" wrapper removed and "$db" appended from the namespace.
	//
	// Body has been validated (well-formed BSON, at most MaxBSONInternalSize per document,
	// at most MaxNesting deep), but it is not copied: it aliases the connection's read
	// buffer (or a pooled one), which is reused for the next request. It is valid until
	// Handle returns, and a reply that aliases it stays valid until it has been written;
	// copy whatever must outlive the call. A merged body may exceed MaxBSONSize.
	Body bsoncore.Document
	// Legacy is true for OP_QUERY: the reply goes back as OP_REPLY.
	Legacy bool
	// MoreToCome is true when the client set OP_MSG's moreToCome bit (an unacknowledged
	// write): the handler runs the command and the server writes no reply.
	MoreToCome bool
	// ExhaustAllowed mirrors OP_MSG's exhaustAllowed bit: the client accepts several replies
	// to this request.
	ExhaustAllowed bool
	// Exhaust is set by the handler, for a request that allows it, to stream: its reply goes
	// out with moreToCome set, and Handle is called again with the same request (Body
	// unchanged, Replies one more) for the next reply, until a call leaves Exhaust unset.
	// MongoDB streams the awaitable hello this way, and Node.js drivers take a single
	// reply to it for a broken stream.
	Exhaust bool
	// Concurrent is set by the handler of a ConnHandler that is also a Forker to pipeline
	// the connection: once this request's reply is written, the connection's requests run
	// at once, each on a handler from Fork, and their replies go out as they finish,
	// matched to their requests by responseTo (the internal client between nodes asks for
	// it; see pipeline.go). It stays set.
	Concurrent bool
	// Replies counts the replies already sent for this request (exhaust); 0 on its first call.
	Replies int
	// Cancel, when set, cancels the context Handle gets, with a cause: a handler that needs
	// to cancel its request (killOp) may use it instead of deriving a context of its own. A
	// pipelined connection sets it (each of its requests has a context of its own, which a
	// cancel message ends); Handle may call it before it returns.
	Cancel context.CancelCauseFunc
	// Compressor is the compressor the request arrived with (CompressorNoop when it was not
	// compressed); the reply uses the same one.
	Compressor Compressor
}

// Compressor identifies an OP_COMPRESSED algorithm by its wire id.
type Compressor uint8

// Wire ids of the compressors, as in MongoDB's OP_COMPRESSED.
const (
	CompressorNoop   Compressor = 0
	CompressorSnappy Compressor = 1
	CompressorZlib   Compressor = 2
	CompressorZstd   Compressor = 3
)

// Limits MongoDB advertises in hello, and this package enforces on reads.
const (
	MaxMessageSize = 48_000_000 // maxMessageSizeBytes
	MaxBSONSize    = 16 * 1024 * 1024
)
