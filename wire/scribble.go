package wire

// A request's bytes live in the connection's read buffer (or a pooled buffer) only until its
// reply is written: the next request is read into the same memory. A handler that keeps a
// slice of its request past Handle (a stored sub-document of the body, say) reads whatever
// comes next. In a race-enabled build (the integration tests' server, go test -race) the
// connection overwrites a request's bytes with scribbleByte once it is answered, so that such
// a slice reads garbage at once, in every test, instead of only when a later request happens
// to land on the same bytes.

// scribbleByte is what a finished request's bytes hold in a race-enabled build: 0xEE is no
// BSON type, so a document read through a kept slice fails to parse.
const scribbleByte = 0xEE

// scribble overwrites b with scribbleByte in a race-enabled build.
func scribble(b []byte) {
	if !scribbleRequests {
		return
	}
	for i := range b {
		b[i] = scribbleByte
	}
}

// scribbleBuf scribbles a pooled buffer's bytes (nil: none).
func scribbleBuf(p *[]byte) {
	if p != nil {
		scribble(*p)
	}
}
