package command

// The MongoDB version cleave presents itself as. Drivers and mongosh decide which commands
// and options to use from maxWireVersion, and test suites from the version string, so the two
// must agree: wire version 21 is MongoDB 7.0.
const (
	ServerVersion  = "7.0.16"
	MaxWireVersion = 21
	MinWireVersion = 0
	// Fcv is the featureCompatibilityVersion reported by getParameter.
	Fcv = "7.0"
	// MaxWriteBatchSize is the largest number of statements in one write command.
	MaxWriteBatchSize = 100_000
)

// VersionArray is buildInfo.versionArray for serverVersion.
var VersionArray = [4]int32{7, 0, 16, 0}

// SupportedCompressors are the OP_COMPRESSED algorithms the wire layer speaks, in the order
// cleave prefers them.
var SupportedCompressors = []string{"snappy", "zlib", "zstd"}
