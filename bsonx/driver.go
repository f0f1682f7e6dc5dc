package bsonx

import "go.mongodb.org/mongo-driver/v2/bson"

// The server's two uses of the driver's codec package, which it otherwise leaves to tests
// (the server works on bsoncore bytes).

// NewObjectID returns a new ObjectId (timestamp, process-unique random bytes, counter), as
// the drivers generate them.
func NewObjectID() [12]byte { return bson.NewObjectID() }

// decimalString prints a Decimal128 (high and low words) as MongoDB does ("1.50", "-Inf").
func decimalString(h, l uint64) string { return bson.NewDecimal128(h, l).String() }
