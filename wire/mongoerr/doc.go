// Package mongoerr is MongoDB's error vocabulary: codes with their codeNames, the one error
// type the client sees, and the {ok: 0} and writeErrors reply shapes. It imports nothing of
// cleave's, so that every layer may return an *Error without depending on another.
//
// Invariants: every Code constant has exactly one codeName, MongoDB's own (a table test
// checks it); code is always sent as an int32, because drivers read it with Int32OK.
//
//	err := mongoerr.New(mongoerr.CommandNotFound, "no such command: '%s'", name)
//	reply := mongoerr.From(err).Reply() // {ok: 0.0, errmsg, code: 59, codeName: "CommandNotFound"}
package mongoerr
