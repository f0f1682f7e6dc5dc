package wire

import (
	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// outcome is what a frame must lead to.
type outcome int

const (
	ok        outcome = iota // decodes; the server answers it (echo handler)
	protocol                 // *ProtocolError: the server closes the connection
	truncated                // the stream ends inside the frame: the server closes
	answered                 // a *mongoerr.Error with code: the server answers {ok: 0, code}
)

// messageCase is one raw frame and what it must become, at both levels: ReadMessage
// (decode) and the server (server). The same table feeds TestReadMessage, TestServerFrames
// and the fuzz seeds.
type messageCase struct {
	name   string
	raw    []byte
	decode outcome
	server outcome
	code   mongoerr.Code // for answered
	// noReply: a moreToCome request, answered with nothing.
	noReply bool
	// queryFailure: answered with OP_REPLY flag QueryFailure and an $err document.
	queryFailure bool
	// body is the Request.Body the handler must see, when set.
	body []byte
}

var (
	ping       = d("ping", int32(1), "$db", "admin")
	insertBody = d("insert", "coll", "ordered", true, "$db", "test")
	doc1       = d("_id", int32(1), "a", "x")
	doc2       = d("_id", int32(2), "b", bson.D{{Key: "c", Value: 1.5}})
	updateBody = d("update", "coll", "$db", "test")
	upd1       = d("q", bson.D{{Key: "_id", Value: int32(1)}}, "u", bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: int32(2)}}}})
	hello      = d("isMaster", int32(1), "helloOk", true, "client", bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "test"}}}})
	readPref   = bson.D{{Key: "mode", Value: "primaryPreferred"}}
)

// messageCases covers every opcode, both section kinds, checksums, moreToCome, each
// compressor, bad lengths, unknown opcodes, invalid BSON and oversized documents.
var messageCases = []messageCase{
	{name: "MsgPing", raw: rawMsg(1, 0, sec0(ping)), body: ping},
	{
		name: "MsgInsertSequence", raw: rawMsg(2, 0, sec0(insertBody), sec1("documents", doc1, doc2)),
		body: d("insert", "coll", "ordered", true, "$db", "test", "documents", bson.A{bson.Raw(doc1), bson.Raw(doc2)}),
	},
	{
		name: "MsgSequenceBeforeBody", raw: rawMsg(3, 0, sec1("documents", doc1), sec0(insertBody)),
		body: d("insert", "coll", "ordered", true, "$db", "test", "documents", bson.A{bson.Raw(doc1)}),
	},
	{
		name: "MsgTwoSequences", raw: rawMsg(4, 0, sec0(updateBody), sec1("updates", upd1), sec1("extra", doc1, doc2)),
		body: d("update", "coll", "$db", "test", "updates", bson.A{bson.Raw(upd1)}, "extra", bson.A{bson.Raw(doc1), bson.Raw(doc2)}),
	},
	{
		name: "MsgEmptySequence", raw: rawMsg(5, 0, sec0(insertBody), sec1("documents")),
		body: d("insert", "coll", "ordered", true, "$db", "test", "documents", bson.A{}),
	},
	{
		name: "MsgTwelveDocSequence", raw: rawMsg(6, 0, sec0(insertBody), sec1("documents",
			doc1, doc2, doc1, doc2, doc1, doc2, doc1, doc2, doc1, doc2, doc1, doc2)),
		body: d("insert", "coll", "ordered", true, "$db", "test", "documents", bson.A{
			bson.Raw(doc1), bson.Raw(doc2), bson.Raw(doc1), bson.Raw(doc2), bson.Raw(doc1), bson.Raw(doc2),
			bson.Raw(doc1), bson.Raw(doc2), bson.Raw(doc1), bson.Raw(doc2), bson.Raw(doc1), bson.Raw(doc2),
		}),
	},
	{name: "MsgChecksumGood", raw: rawMsg(7, ChecksumPresent, sec0(ping)), body: ping},
	{name: "MsgChecksumBad", raw: withBadChecksum(rawMsg(8, ChecksumPresent, sec0(ping))), decode: protocol, server: protocol},
	{name: "MsgChecksumMissing", raw: rawFrame(-1, 9, OpCodeMsg, le.AppendUint32(nil, 1)), decode: protocol, server: protocol},
	{name: "MsgMoreToCome", raw: rawMsg(10, MoreToCome, sec0(insertBody), sec1("documents", doc1)), noReply: true},
	{name: "MsgMoreToComeInvalid", raw: rawMsg(11, MoreToCome, sec0(corrupt(ping, 4, 0x42))),
		decode: answered, server: answered, code: mongoerr.InvalidBSON, noReply: true},
	{name: "MsgExhaustAllowed", raw: rawMsg(12, ExhaustAllowed, sec0(ping)), body: ping},
	{name: "MsgOptionalUnknownFlag", raw: rawMsg(13, 1<<20, sec0(ping)), body: ping},
	{name: "MsgIllegalFlag", raw: rawMsg(14, 1<<2, sec0(ping)), decode: protocol, server: protocol},
	{name: "MsgNoBody", raw: rawMsg(15, 0, sec1("documents", doc1)), decode: answered, server: answered, code: 40587},
	{name: "MsgNoSections", raw: rawMsg(16, 0), decode: answered, server: answered, code: 40587},
	{name: "MsgTwoBodies", raw: rawMsg(17, 0, sec0(ping), sec0(ping)), decode: answered, server: answered, code: 40430},
	{name: "MsgUnknownSectionKind", raw: rawMsg(18, 0, sec0(ping), []byte{3, 0}), decode: answered, server: answered, code: 40432},
	{name: "MsgSecurityToken", raw: rawMsg(19, 0, []byte{2, 'x', 0}, sec0(ping)),
		decode: answered, server: answered, code: mongoerr.Unauthorized},
	{name: "MsgDuplicateSequence", raw: rawMsg(20, 0, sec0(insertBody), sec1("documents", doc1), sec1("documents", doc2)),
		decode: answered, server: answered, code: 40431},
	{name: "MsgSequenceDuplicatesField", raw: rawMsg(21, 0, sec0(d("insert", "c", "documents", bson.A{}, "$db", "t")), sec1("documents", doc1)),
		decode: answered, server: answered, code: 40433},
	{name: "MsgSequenceDuplicatesPath", raw: rawMsg(22, 0, sec0(d("insert", "c", "a", bson.D{{Key: "b", Value: 1}}, "$db", "t")), sec1("a.b", doc1)),
		decode: answered, server: answered, code: 40433},
	{name: "MsgSequenceThroughArray", raw: rawMsg(23, 0, sec0(d("insert", "c", "a", bson.A{1}, "$db", "t")), sec1("a.b", doc1)),
		decode: answered, server: answered, code: 40433},
	{name: "MsgThreeSequences", raw: rawMsg(24, 0, sec0(insertBody), sec1("a", doc1), sec1("b", doc1), sec1("c", doc1)),
		decode: protocol, server: protocol},
	{name: "MsgBodyOverrunsMessage", raw: rawMsg(25, 0, sec0(ping)[:len(ping)-3]), decode: protocol, server: protocol},
	{name: "MsgBodyLengthTiny", raw: rawMsg(26, 0, sec0(withLength(ping, 4))), decode: protocol, server: protocol},
	{name: "MsgBodyTruncatedLength", raw: rawMsg(27, 0, []byte{0, 5, 0}), decode: protocol, server: protocol},
	{name: "MsgSequenceOverruns", raw: rawMsg(28, 0, sec0(insertBody), sec1("documents", doc1)[:12]), decode: protocol, server: protocol},
	{name: "MsgSequenceSizeTooSmall", raw: rawMsg(29, 0, sec0(insertBody), []byte{1, 4, 0, 0, 0}), decode: protocol, server: protocol},
	{name: "MsgSequenceIDUnterminated", raw: rawMsg(30, 0, sec0(insertBody), []byte{1, 7, 0, 0, 0, 'a', 'b', 'c'}),
		decode: protocol, server: protocol},
	{name: "MsgSequenceDocOverruns", raw: rawMsg(31, 0, sec0(insertBody), sec1("documents", withLength(doc1, int32(len(doc1)+1)))),
		decode: answered, server: answered, code: mongoerr.InvalidBSON},
	{name: "MsgSequenceDocInvalid", raw: rawMsg(32, 0, sec0(insertBody), sec1("documents", doc1, corrupt(doc2, 4, 0x55))),
		decode: answered, server: answered, code: mongoerr.InvalidBSON},
	{name: "MsgBodyBadType", raw: rawMsg(33, 0, sec0(corrupt(ping, 4, 0x42))), decode: answered, server: answered, code: mongoerr.InvalidBSON},
	{name: "MsgBodyBadBool", raw: rawMsg(34, 0, sec0(corrupt(d("ok", true, "$db", "a"), 8, 2))),
		decode: answered, server: answered, code: mongoerr.InvalidBSON},
	{name: "MsgBodyBadStringLength", raw: rawMsg(35, 0, sec0(corrupt(d("s", "abc", "$db", "a"), 7, 0x7f))),
		decode: answered, server: answered, code: mongoerr.InvalidBSON},
	{name: "MsgBodyMissingEOO", raw: rawMsg(36, 0, sec0(corrupt(ping, len(ping)-1, 1))),
		decode: answered, server: answered, code: mongoerr.InvalidBSON},
	{name: "MsgNesting200", raw: rawMsg(37, 0, sec0(nested(200))), body: nested(200)},
	{name: "MsgNesting201", raw: rawMsg(38, 0, sec0(nested(201))), decode: answered, server: answered, code: mongoerr.Overflow},
	{name: "MsgBodyTooLarge", raw: rawMsg(39, 0, sec0(withLength(ping, MaxBSONInternalSize+1))),
		decode: answered, server: answered, code: mongoerr.BSONObjectTooLarge},
	{name: "MsgSequenceDocTooLarge", raw: rawMsg(40, 0, sec0(insertBody), sec1("documents", withLength(doc1, MaxBSONInternalSize+1))),
		decode: answered, server: answered, code: mongoerr.BSONObjectTooLarge},
	{name: "MsgTooShortForFlags", raw: rawFrame(-1, 41, OpCodeMsg, []byte{0, 0}), decode: protocol, server: protocol},
	{name: "MsgHeaderOnly", raw: rawFrame(-1, 42, OpCodeMsg, nil), decode: protocol, server: protocol},

	{name: "QueryHello", raw: AppendOpQuery(nil, 50, 0, "admin.$cmd", 0, -1, hello, nil),
		body: d("isMaster", int32(1), "helloOk", true, "client", bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "test"}}}}, "$db", "admin")},
	{name: "QueryWrapped", raw: AppendOpQuery(nil, 51, 4, "mydb.$cmd", 0, 1, d("$query", bson.D{{Key: "ping", Value: int32(1)}}, "$readPreference", readPref), nil),
		body: d("ping", int32(1), "$readPreference", readPref, "$db", "mydb")},
	{name: "QueryWithFields", raw: AppendOpQuery(nil, 52, 0, "admin.$cmd", 0, -1, hello, d("a", int32(1))),
		body: d("isMaster", int32(1), "helloOk", true, "client", bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "test"}}}}, "$db", "admin")},
	{name: "QueryDollarDB", raw: AppendOpQuery(nil, 53, 0, "admin.$cmd", 0, -1, d("ping", int32(1), "$db", "x"), nil),
		server: answered, code: 40621},
	{name: "QueryNotCommand", raw: AppendOpQuery(nil, 54, 0, "test.coll", 0, 0, d("a", int32(1)), nil), queryFailure: true},
	{name: "QueryInvalidBSON", raw: AppendOpQuery(nil, 55, 0, "admin.$cmd", 0, -1, corrupt(hello, 4, 0x33), nil),
		decode: answered, server: answered, code: mongoerr.InvalidBSON},
	{name: "QueryNamespaceUnterminated", raw: rawFrame(-1, 56, OpCodeQuery, []byte{0, 0, 0, 0, 'a', 'd'}), decode: protocol, server: protocol},
	{name: "QueryTrailingBytes", raw: rawFrame(-1, 57, OpCodeQuery,
		append(AppendOpQuery(nil, 57, 0, "admin.$cmd", 0, -1, hello, d("a", int32(1)))[HeaderSize:], 1, 2, 3)), decode: protocol, server: protocol},
	{name: "QueryQueryOverruns", raw: rawFrame(-1, 58, OpCodeQuery, AppendOpQuery(nil, 58, 0, "admin.$cmd", 0, -1, hello, nil)[HeaderSize:40]),
		decode: protocol, server: protocol},

	{name: "CompressedNoop", raw: compressed(CompressorNoop, rawMsg(60, 0, sec0(ping))), body: ping},
	{name: "CompressedSnappy", raw: compressed(CompressorSnappy, rawMsg(61, 0, sec0(ping))), body: ping},
	{name: "CompressedZlib", raw: compressed(CompressorZlib, rawMsg(62, 0, sec0(ping))), body: ping},
	{name: "CompressedZstd", raw: compressed(CompressorZstd, rawMsg(63, 0, sec0(ping))), body: ping},
	{name: "CompressedZstdChecksum", raw: compressed(CompressorZstd, rawMsg(64, ChecksumPresent, sec0(ping))), body: ping},
	{name: "CompressedSnappySequence", raw: compressed(CompressorSnappy, rawMsg(65, 0, sec0(insertBody), sec1("documents", doc1))),
		body: d("insert", "coll", "ordered", true, "$db", "test", "documents", bson.A{bson.Raw(doc1)})},
	{name: "CompressedZlibQuery", raw: compressed(CompressorZlib, AppendOpQuery(nil, 66, 0, "admin.$cmd", 0, -1, hello, nil)),
		body: d("isMaster", int32(1), "helloOk", true, "client", bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "test"}}}}, "$db", "admin")},
	{name: "CompressedInvalidBSON", raw: compressed(CompressorSnappy, rawMsg(67, 0, sec0(corrupt(ping, 4, 0x42)))),
		server: answered, code: mongoerr.InvalidBSON},
	{name: "CompressedUnknownCompressor", raw: rawCompressed(68, OpCodeMsg, 10, 9, make([]byte, 10)), decode: protocol, server: protocol},
	{name: "CompressedSizeMismatch", raw: rawCompressed(69, OpCodeMsg, int32(len(rawMsg(69, 0, sec0(ping)))-HeaderSize+1), CompressorNoop,
		rawMsg(69, 0, sec0(ping))[HeaderSize:]), server: protocol},
	{name: "CompressedGarbage", raw: rawCompressed(70, OpCodeMsg, 40, CompressorZstd, []byte("not zstd at all")), server: protocol},
	{name: "CompressedTooLarge", raw: rawCompressed(71, OpCodeMsg, MaxMessageSize, CompressorSnappy, []byte{0}),
		decode: protocol, server: protocol},
	{name: "CompressedNegativeSize", raw: rawCompressed(72, OpCodeMsg, -5, CompressorSnappy, []byte{0}), decode: protocol, server: protocol},
	{name: "CompressedNested", raw: rawCompressed(73, OpCodeCompressed, 10, CompressorNoop, make([]byte, 10)), decode: protocol, server: protocol},
	{name: "CompressedInsideIsInsert", raw: rawCompressed(74, OpCodeInsert, 4, CompressorNoop, make([]byte, 4)), server: protocol},
	{name: "CompressedTruncated", raw: rawFrame(-1, 75, OpCodeCompressed, []byte{0xdd, 7, 0, 0}), decode: protocol, server: protocol},

	{name: "LengthBelowHeader", raw: rawFrame(15, 80, OpCodeMsg, nil), decode: protocol, server: protocol},
	{name: "LengthNegative", raw: rawFrame(-100, 81, OpCodeMsg, nil), decode: protocol, server: protocol},
	{name: "LengthAboveMax", raw: rawFrame(MaxMessageSize+1, 82, OpCodeMsg, nil), decode: protocol, server: protocol},
	{name: "FrameTruncated", raw: rawMsg(83, 0, sec0(ping))[:30], decode: truncated, server: truncated},
	{name: "HeaderTruncated", raw: rawMsg(84, 0, sec0(ping))[:9], decode: truncated, server: truncated},
	{name: "OpInsert", raw: rawFrame(-1, 85, OpCodeInsert, append([]byte{0, 0, 0, 0, 'a', '.', 'b', 0}, doc1...)), decode: protocol, server: protocol},
	{name: "OpGetMore", raw: rawFrame(-1, 86, OpCodeGetMore, make([]byte, 20)), decode: protocol, server: protocol},
	{name: "OpcodeUnknown", raw: rawFrame(-1, 87, 9999, []byte{1, 2, 3}), decode: protocol, server: protocol},
	{name: "ReplyFromClient", raw: AppendOpReply(nil, 88, 0, 0, ping), server: protocol},
}
