package bsonx

import "go.mongodb.org/mongo-driver/v2/bson"

// NewObjectID returns a new ObjectId (timestamp, process-unique random bytes, counter), as
// the drivers generate them; the one use of the driver's codec package in the server.
func NewObjectID() [12]byte { return bson.NewObjectID() }
