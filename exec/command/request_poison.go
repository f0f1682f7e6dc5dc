package command

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// A connection keeps one Request and reuses it for each of its commands (exec/conn.go), so a
// handler must not keep its *Request past its return: it would read the next command's
// fields. End clears the Request when its command is done; in a race-enabled build (the
// integration tests' server, go test -race) it fills it with marker values instead, so that
// a command that kept it reads PoisonedName and a body that names no command, where a cleared
// one could pass for an empty request, and a goroutine still reading it races with End's
// writes, which the race detector reports. TestRequestNotRetained (request_retain_test.go)
// refuses the ways to keep it in the sources themselves.

// PoisonedName is the Name of a Request after End in a race-enabled build.
const PoisonedName = "<command.Request used after its command returned>"

// poisonedRequest is what End writes in a race-enabled build.
var poisonedRequest = Request{
	Name: PoisonedName, DB: PoisonedName, RequestID: -1,
	Body: bsoncore.NewDocumentBuilder().AppendBoolean(PoisonedName, true).Build(),
}

// End clears r once its command is done and its reply built, for the connection to reuse it.
func (r *Request) End() {
	if poisonRequests {
		*r = poisonedRequest
		return
	}
	*r = Request{}
}
