package mongoerr

import "strconv"

// Code is a MongoDB error code; String returns MongoDB's codeName.
type Code int32

// MongoDB's codes from src/mongo/base/error_codes.yml (only those cleave sends), plus the
// assertion-site codes MongoDB reports as Location<N>, plus Cosmos DB's 16500.
const (
	OK                                       Code = 0
	InternalError                            Code = 1
	BadValue                                 Code = 2
	NoSuchKey                                Code = 4
	GraphContainsCycle                       Code = 5
	HostUnreachable                          Code = 6
	HostNotFound                             Code = 7
	UnknownError                             Code = 8
	FailedToParse                            Code = 9
	UserNotFound                             Code = 11
	UnsupportedFormat                        Code = 12
	Unauthorized                             Code = 13
	TypeMismatch                             Code = 14
	Overflow                                 Code = 15
	InvalidLength                            Code = 16
	ProtocolError                            Code = 17
	AuthenticationFailed                     Code = 18
	IllegalOperation                         Code = 20
	EmptyArrayOperation                      Code = 21
	InvalidBSON                              Code = 22
	AlreadyInitialized                       Code = 23
	LockTimeout                              Code = 24
	NamespaceNotFound                        Code = 26
	IndexNotFound                            Code = 27
	PathNotViable                            Code = 28
	NonExistentPath                          Code = 29
	InvalidPath                              Code = 30
	RoleNotFound                             Code = 31
	ConflictingUpdateOperators               Code = 40
	CursorNotFound                           Code = 43
	NoMatchingDocument                       Code = 47
	NamespaceExists                          Code = 48
	InvalidRoleModification                  Code = 49
	MaxTimeMSExpired                         Code = 50
	DollarPrefixedFieldName                  Code = 52
	InvalidIDField                           Code = 53 // InvalidIdField
	NotSingleValueField                      Code = 54
	InvalidDBRef                             Code = 55
	EmptyFieldName                           Code = 56
	DottedFieldName                          Code = 57
	CommandNotFound                          Code = 59
	ShardKeyNotFound                         Code = 61
	StaleShardVersion                        Code = 63
	WriteConcernTimeout                      Code = 64
	MultipleErrorsOccurred                   Code = 65
	ImmutableField                           Code = 66
	CannotCreateIndex                        Code = 67
	IndexAlreadyExists                       Code = 68
	ShardNotFound                            Code = 70
	InvalidOptions                           Code = 72
	InvalidNamespace                         Code = 73
	NoReplicationEnabled                     Code = 76
	UnknownReplWriteConcern                  Code = 79
	IndexOptionsConflict                     Code = 85
	IndexKeySpecsConflict                    Code = 86
	CannotSplit                              Code = 87
	NetworkTimeout                           Code = 89
	ShutdownInProgress                       Code = 91
	OperationFailed                          Code = 96
	UnsatisfiableWriteConcern                Code = 100
	WriteConflict                            Code = 112
	CommandNotSupported                      Code = 115
	ConflictingOperationInProgress           Code = 117
	NamespaceNotSharded                      Code = 118
	DocumentValidationFailure                Code = 121
	CommandFailed                            Code = 125
	CappedPositionLost                       Code = 136
	JSInterpreterFailure                     Code = 139
	CursorInUse                              Code = 143
	ExceededMemoryLimit                      Code = 146
	StaleEpoch                               Code = 150
	FailedToSatisfyReadPreference            Code = 133
	ChunkTooBig                              Code = 153
	IncompatibleCollationVersion             Code = 161
	ZoneStillInUse                           Code = 163
	ViewDepthLimitExceeded                   Code = 165
	CommandNotSupportedOnView                Code = 166
	OptionNotSupportedOnView                 Code = 167
	InvalidPipelineOperator                  Code = 168
	CannotIndexParallelArrays                Code = 171
	QueryPlanKilled                          Code = 175
	ZoneNotFound                             Code = 177
	RangeOverlapConflict                     Code = 178
	AmbiguousIndexKeyPattern                 Code = 181
	InvalidViewDefinition                    Code = 182
	ClientMetadataCannotBeMutated            Code = 186
	PrimarySteppedDown                       Code = 189
	InvalidIndexSpecificationOption          Code = 197
	CannotBuildIndexKeys                     Code = 201
	NoSuchSession                            Code = 206
	InvalidUUID                              Code = 207
	KeyNotFound                              Code = 211
	IllegalOpMsgFlag                         Code = 223
	TransactionTooOld                        Code = 225
	RetryChangeStream                        Code = 234
	CursorKilled                             Code = 237
	NotImplemented                           Code = 238
	SnapshotTooOld                           Code = 239
	ConversionFailure                        Code = 241
	CannotCreateCollection                   Code = 242
	SnapshotUnavailable                      Code = 246
	StaleDbVersion                           Code = 249
	NoSuchTransaction                        Code = 251
	TransactionCommitted                     Code = 256
	TransactionTooLarge                      Code = 257
	ExceededTimeLimit                        Code = 262
	OperationNotSupportedInTransaction       Code = 263
	FailPointSetFailed                       Code = 266
	PreparedTransactionInProgress            Code = 267
	IndexBuildAborted                        Code = 276
	ClientDisconnect                         Code = 279
	ChangeStreamFatalError                   Code = 280
	InvalidResumeToken                       Code = 260
	WouldChangeOwningShard                   Code = 283
	ChangeStreamHistoryLost                  Code = 286
	ChecksumMismatch                         Code = 288
	NoQueryExecutionPlans                    Code = 291
	QueryExceededMemoryLimitNoDiskUseAllowed Code = 292
	APIVersionError                          Code = 322
	APIStrictError                           Code = 323
	APIDeprecationError                      Code = 324
	MechanismUnavailable                     Code = 334
	ReshardCollectionInProgress              Code = 338
	NoSuchReshardCollection                  Code = 339
	ReshardCollectionAborted                 Code = 341
	ShardInvalidatedForTargeting             Code = 343
	UnsupportedOpQueryCommand                Code = 352
	InvalidBSONType                          Code = 357
	CannotConvertIndexToUnique               Code = 359
	CannotDropShardKeyIndex                  Code = 370
	SocketException                          Code = 9001
	NotWritablePrimary                       Code = 10107
	BSONObjectTooLarge                       Code = 10334
	DuplicateKey                             Code = 11000
	Interrupted                              Code = 11601
	InterruptedAtShutdown                    Code = 11600
	InterruptedDueToReplStateChange          Code = 11602
	MergeStageNoMatchingDocument             Code = 13113
	StaleConfig                              Code = 13388
	NotPrimaryNoSecondaryOk                  Code = 13435
	NotPrimaryOrSecondary                    Code = 13436
	OutOfDiskSpace                           Code = 14031
	TooManyRequests                          Code = 16500 // Cosmos DB's request-rate-too-large; not in MongoDB's table

	// Assertion sites MongoDB reports as Location<N>.
	Location15974 Code = 15974 // $sort key ordering must be 1 or -1 (find sort)
	Location15975 Code = 15975 // $sort key ordering must be 1 (for ascending) or -1 (for descending)
	Location15976 Code = 15976 // $sort stage must have at least one sort key
	Location16766 Code = 16766 // hashed indexes do not support array values
	Location16410 Code = 16410 // FieldPath field names may not start with '$'
	Location17276 Code = 17276 // $$ROOT/$$CURRENT rebinding
	Location31253 Code = 31253 // cannot mix inclusion and exclusion under one path
	Location31254 Code = 31254 // cannot do exclusion on a field in inclusion projection
	Location40324 Code = 40324 // unrecognized pipeline stage name
	Location40413 Code = 40413 // BSON field '<cmd>.<field>' is a duplicate field
	Location40414 Code = 40414 // BSON field '<cmd>.<field>' is missing but a required field
	Location40415 Code = 40415 // BSON field '<cmd>.<field>' is an unknown field
	Location40571 Code = 40571 // OP_MSG requests require a $db argument
	Location40352 Code = 40352 // FieldPath cannot be constructed with empty string
	Location40353 Code = 40353 // FieldPath must not end with a '.'
	Location51002 Code = 51002 // Role "…@…" already exists
	Location51003 Code = 51003 // User "…@…" already exists
	Location51024 Code = 51024 // batchSize must be non-negative
	Location51108 Code = 51108 // invalid regex flag
)

// Assertion sites of change streams ($changeStream).
const (
	Location40573 Code = 40573 // $changeStream may not be opened on the internal databases
	Location40674 Code = 40674 // only one resume option
	Location50808 Code = 50808 // $changeStream's argument must be a document
	Location31123 Code = 31123 // allChangesForCluster only on the admin database
)

// Assertion sites of clustered collections (create's clusteredIndex, collMod).
const (
	Location5979700 Code = 5979700 // clusteredIndex requires unique: true
	Location5979703 Code = 5979703 // clusteredIndex: <bool> is for internal collections
	Location5979704 Code = 5979704 // clusteredIndex with v other than 2
	Location6011800 Code = 6011800 // hidden is not supported for a clusteredIndex
	Location6049200 Code = 6049200 // size is not allowed on clustered collections
	Location6049204 Code = 6049204 // max is not allowed on clustered collections
)

// Location6047401 is the refusal of $listSearchIndexes by a MongoDB 7.0 server that is not Atlas.
const Location6047401 Code = 6047401

// names maps every Code above to MongoDB's codeName. A test checks that it covers the
// constants and that no two codes share a name.
var names = map[Code]string{
	StaleConfig:                              "StaleConfig",
	ShardInvalidatedForTargeting:             "ShardInvalidatedForTargeting",
	PreparedTransactionInProgress:            "PreparedTransactionInProgress",
	StaleDbVersion:                           "StaleDbVersion",
	SnapshotUnavailable:                      "SnapshotUnavailable",
	SnapshotTooOld:                           "SnapshotTooOld",
	StaleEpoch:                               "StaleEpoch",
	RetryChangeStream:                        "RetryChangeStream",
	FailedToSatisfyReadPreference:            "FailedToSatisfyReadPreference",
	StaleShardVersion:                        "StaleShardVersion",
	OK:                                       "OK",
	InternalError:                            "InternalError",
	BadValue:                                 "BadValue",
	NoSuchKey:                                "NoSuchKey",
	GraphContainsCycle:                       "GraphContainsCycle",
	HostUnreachable:                          "HostUnreachable",
	HostNotFound:                             "HostNotFound",
	UnknownError:                             "UnknownError",
	FailedToParse:                            "FailedToParse",
	UserNotFound:                             "UserNotFound",
	UnsupportedFormat:                        "UnsupportedFormat",
	Unauthorized:                             "Unauthorized",
	TypeMismatch:                             "TypeMismatch",
	Overflow:                                 "Overflow",
	InvalidLength:                            "InvalidLength",
	ProtocolError:                            "ProtocolError",
	AuthenticationFailed:                     "AuthenticationFailed",
	IllegalOperation:                         "IllegalOperation",
	EmptyArrayOperation:                      "EmptyArrayOperation",
	InvalidBSON:                              "InvalidBSON",
	AlreadyInitialized:                       "AlreadyInitialized",
	LockTimeout:                              "LockTimeout",
	NamespaceNotFound:                        "NamespaceNotFound",
	IndexNotFound:                            "IndexNotFound",
	PathNotViable:                            "PathNotViable",
	NonExistentPath:                          "NonExistentPath",
	InvalidPath:                              "InvalidPath",
	RoleNotFound:                             "RoleNotFound",
	ConflictingUpdateOperators:               "ConflictingUpdateOperators",
	CursorNotFound:                           "CursorNotFound",
	NoMatchingDocument:                       "NoMatchingDocument",
	ChangeStreamFatalError:                   "ChangeStreamFatalError",
	InvalidResumeToken:                       "InvalidResumeToken",
	ChangeStreamHistoryLost:                  "ChangeStreamHistoryLost",
	NamespaceExists:                          "NamespaceExists",
	InvalidRoleModification:                  "InvalidRoleModification",
	MaxTimeMSExpired:                         "MaxTimeMSExpired",
	DollarPrefixedFieldName:                  "DollarPrefixedFieldName",
	InvalidIDField:                           "InvalidIdField",
	NotSingleValueField:                      "NotSingleValueField",
	InvalidDBRef:                             "InvalidDBRef",
	EmptyFieldName:                           "EmptyFieldName",
	DottedFieldName:                          "DottedFieldName",
	CommandNotFound:                          "CommandNotFound",
	ShardKeyNotFound:                         "ShardKeyNotFound",
	WriteConcernTimeout:                      "WriteConcernTimeout",
	MultipleErrorsOccurred:                   "MultipleErrorsOccurred",
	ImmutableField:                           "ImmutableField",
	CannotCreateIndex:                        "CannotCreateIndex",
	IndexAlreadyExists:                       "IndexAlreadyExists",
	ShardNotFound:                            "ShardNotFound",
	InvalidOptions:                           "InvalidOptions",
	InvalidNamespace:                         "InvalidNamespace",
	NoReplicationEnabled:                     "NoReplicationEnabled",
	UnknownReplWriteConcern:                  "UnknownReplWriteConcern",
	IndexOptionsConflict:                     "IndexOptionsConflict",
	IndexKeySpecsConflict:                    "IndexKeySpecsConflict",
	CannotSplit:                              "CannotSplit",
	NetworkTimeout:                           "NetworkTimeout",
	ShutdownInProgress:                       "ShutdownInProgress",
	OperationFailed:                          "OperationFailed",
	UnsatisfiableWriteConcern:                "UnsatisfiableWriteConcern",
	WriteConflict:                            "WriteConflict",
	CommandNotSupported:                      "CommandNotSupported",
	ConflictingOperationInProgress:           "ConflictingOperationInProgress",
	NamespaceNotSharded:                      "NamespaceNotSharded",
	DocumentValidationFailure:                "DocumentValidationFailure",
	CommandFailed:                            "CommandFailed",
	CappedPositionLost:                       "CappedPositionLost",
	JSInterpreterFailure:                     "JSInterpreterFailure",
	CursorInUse:                              "CursorInUse",
	UnsupportedOpQueryCommand:                "UnsupportedOpQueryCommand",
	ExceededMemoryLimit:                      "ExceededMemoryLimit",
	ChunkTooBig:                              "ChunkTooBig",
	IncompatibleCollationVersion:             "IncompatibleCollationVersion",
	ZoneStillInUse:                           "ZoneStillInUse",
	ZoneNotFound:                             "ZoneNotFound",
	RangeOverlapConflict:                     "RangeOverlapConflict",
	ViewDepthLimitExceeded:                   "ViewDepthLimitExceeded",
	CommandNotSupportedOnView:                "CommandNotSupportedOnView",
	OptionNotSupportedOnView:                 "OptionNotSupportedOnView",
	InvalidPipelineOperator:                  "InvalidPipelineOperator",
	CannotIndexParallelArrays:                "CannotIndexParallelArrays",
	QueryPlanKilled:                          "QueryPlanKilled",
	AmbiguousIndexKeyPattern:                 "AmbiguousIndexKeyPattern",
	InvalidViewDefinition:                    "InvalidViewDefinition",
	ClientMetadataCannotBeMutated:            "ClientMetadataCannotBeMutated",
	PrimarySteppedDown:                       "PrimarySteppedDown",
	InvalidIndexSpecificationOption:          "InvalidIndexSpecificationOption",
	CannotBuildIndexKeys:                     "CannotBuildIndexKeys",
	NoSuchSession:                            "NoSuchSession",
	InvalidUUID:                              "InvalidUUID",
	KeyNotFound:                              "KeyNotFound",
	IllegalOpMsgFlag:                         "IllegalOpMsgFlag",
	TransactionTooOld:                        "TransactionTooOld",
	CursorKilled:                             "CursorKilled",
	NotImplemented:                           "NotImplemented",
	ConversionFailure:                        "ConversionFailure",
	CannotCreateCollection:                   "CannotCreateCollection",
	NoSuchTransaction:                        "NoSuchTransaction",
	TransactionCommitted:                     "TransactionCommitted",
	TransactionTooLarge:                      "TransactionTooLarge",
	ExceededTimeLimit:                        "ExceededTimeLimit",
	OperationNotSupportedInTransaction:       "OperationNotSupportedInTransaction",
	FailPointSetFailed:                       "FailPointSetFailed",
	ClientDisconnect:                         "ClientDisconnect",
	IndexBuildAborted:                        "IndexBuildAborted",
	NoQueryExecutionPlans:                    "NoQueryExecutionPlans",
	WouldChangeOwningShard:                   "WouldChangeOwningShard",
	ChecksumMismatch:                         "ChecksumMismatch",
	QueryExceededMemoryLimitNoDiskUseAllowed: "QueryExceededMemoryLimitNoDiskUseAllowed",
	APIVersionError:                          "APIVersionError",
	APIStrictError:                           "APIStrictError",
	APIDeprecationError:                      "APIDeprecationError",
	MechanismUnavailable:                     "MechanismUnavailable",
	ReshardCollectionInProgress:              "ReshardCollectionInProgress",
	NoSuchReshardCollection:                  "NoSuchReshardCollection",
	ReshardCollectionAborted:                 "ReshardCollectionAborted",
	InvalidBSONType:                          "InvalidBSONType",
	CannotConvertIndexToUnique:               "CannotConvertIndexToUnique",
	CannotDropShardKeyIndex:                  "CannotDropShardKeyIndex",
	SocketException:                          "SocketException",
	NotWritablePrimary:                       "NotWritablePrimary",
	BSONObjectTooLarge:                       "BSONObjectTooLarge",
	DuplicateKey:                             "DuplicateKey",
	Interrupted:                              "Interrupted",
	InterruptedAtShutdown:                    "InterruptedAtShutdown",
	InterruptedDueToReplStateChange:          "InterruptedDueToReplStateChange",
	MergeStageNoMatchingDocument:             "MergeStageNoMatchingDocument",
	NotPrimaryNoSecondaryOk:                  "NotPrimaryNoSecondaryOk",
	NotPrimaryOrSecondary:                    "NotPrimaryOrSecondary",
	OutOfDiskSpace:                           "OutOfDiskSpace",
	TooManyRequests:                          "TooManyRequests",
}

// String returns MongoDB's codeName: the name from error_codes.yml, or "Location<N>" for an
// assertion-site code, as MongoDB itself reports those.
func (c Code) String() string {
	if n, ok := names[c]; ok {
		return n
	}
	return "Location" + strconv.Itoa(int(c))
}
