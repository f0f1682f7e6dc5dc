package mongoerr

import (
	"errors"
	"fmt"
	"strconv"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Error is a failure the client sees. It is always used as *Error.
type Error struct {
	Code    Code
	Message string   // errmsg; matches MongoDB's wording wherever clients may parse it
	Labels  []string // errorLabels; usually empty
	// Info holds extra top-level reply fields MongoDB attaches to some errors
	// (keyPattern and keyValue for E11000, writeConcernError, ...). Nil when none.
	Info  bsoncore.Document
	cause error // for our logs, never sent
}

// New returns an *Error with code and a message formatted like fmt.Sprintf.
func New(code Code, format string, args ...any) *Error {
	if len(args) == 0 {
		return &Error{Code: code, Message: format}
	}
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error that reports code and message to the client and keeps cause for logs.
func Wrap(cause error, code Code, format string, args ...any) *Error {
	e := New(code, format, args...)
	e.cause = cause
	return e
}

// Error implements error.
func (e *Error) Error() string { return fmt.Sprintf("%s (%d): %s", e.Code, int32(e.Code), e.Message) }

// Unwrap returns the cause kept for logs, if any.
func (e *Error) Unwrap() error { return e.cause }

// WithLabels returns e after adding errorLabels.
func (e *Error) WithLabels(labels ...string) *Error {
	e.Labels = append(e.Labels, labels...)
	return e
}

// WithContext returns a copy of e whose message is prefixed with context, as MongoDB's
// DBException::addContext chains them; e is left as it was (it may be a shared value):
//
//	New(ImmutableField, "Performing an update on the path '_id' …").WithContext("Plan executor error during findAndModify")
//	→ "Plan executor error during findAndModify :: caused by :: Performing an update on the path '_id' …"
func (e *Error) WithContext(context string) *Error {
	c := *e
	c.Message = context + " :: caused by :: " + e.Message
	return &c
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	if err == nil { // errors.As would make e escape: an allocation on every successful command
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// From returns the *Error in err's chain, or an InternalError carrying err as its cause.
// exec.Dispatch maps lower layers' sentinels before calling it; anything left is a bug or
// an I/O failure, and its text is not sent to the client.
func From(err error) *Error {
	if e := As(err); e != nil {
		return e
	}
	return Wrap(err, InternalError, "internal error")
}

// AppendReply appends the elements of an {ok: 0} reply for e to the open document dst:
// ok, errmsg, code, codeName, errorLabels and e.Info's fields, in MongoDB's order.
func (e *Error) AppendReply(dst []byte) []byte {
	dst = bsoncore.AppendDoubleElement(dst, "ok", 0)
	dst = bsoncore.AppendStringElement(dst, "errmsg", e.Message)
	dst = bsoncore.AppendInt32Element(dst, "code", int32(e.Code))
	dst = bsoncore.AppendStringElement(dst, "codeName", e.Code.String())
	if len(e.Labels) > 0 {
		var aidx int32
		aidx, dst = bsoncore.AppendArrayElementStart(dst, "errorLabels")
		for i, l := range e.Labels {
			dst = bsoncore.AppendStringElement(dst, strconv.Itoa(i), l)
		}
		dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	}
	if len(e.Info) > 0 {
		elems, _ := e.Info.Elements()
		for _, el := range elems {
			dst = append(dst, el...)
		}
	}
	return dst
}

// Reply returns the complete {ok: 0, errmsg, code, codeName} document for e.
func (e *Error) Reply() bsoncore.Document {
	idx, dst := bsoncore.AppendDocumentStart(nil)
	dst = e.AppendReply(dst)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst
}

// WriteError is one failed document of a write command: the index of the document in the
// request and the error it met. It is a result ({ok: 1, writeErrors: [...]}), not a Go error.
type WriteError struct {
	Index int
	Err   *Error
}

// AppendWriteErrors appends a writeErrors array element to the open document dst, each
// entry {index, code, [codeName,] errmsg, ...Info} as mongos reports it.
func AppendWriteErrors(dst []byte, errs []WriteError) []byte {
	aidx, dst := bsoncore.AppendArrayElementStart(dst, "writeErrors")
	for i, we := range errs {
		var didx int32
		didx, dst = bsoncore.AppendDocumentElementStart(dst, strconv.Itoa(i))
		dst = bsoncore.AppendInt32Element(dst, "index", int32(we.Index))
		dst = bsoncore.AppendInt32Element(dst, "code", int32(we.Err.Code))
		if len(we.Err.Info) > 0 {
			elems, _ := we.Err.Info.Elements()
			for _, el := range elems {
				dst = append(dst, el...)
			}
		}
		dst = bsoncore.AppendStringElement(dst, "errmsg", we.Err.Message)
		dst, _ = bsoncore.AppendDocumentEnd(dst, didx)
	}
	dst, _ = bsoncore.AppendArrayEnd(dst, aidx)
	return dst
}

// FromReply is AppendReply's inverse: the error of an {ok: 0} reply (or of a writeErrors
// entry), its fields beyond those every error has (keyPattern, keyValue, errInfo, ...) kept
// as Info and its errorLabels as Labels.
func FromReply(reply bsoncore.Document) *Error {
	code, _ := reply.Lookup("code").AsInt32OK()
	msg, _ := reply.Lookup("errmsg").StringValueOK()
	e := New(Code(code), "%s", msg)
	e.Info = replyInfo(reply)
	if labels, ok := reply.Lookup("errorLabels").ArrayOK(); ok {
		vals, _ := labels.Values()
		for _, v := range vals {
			if l, ok := v.StringValueOK(); ok {
				e.Labels = append(e.Labels, l)
			}
		}
	}
	return e
}

// replyInfo returns the fields of an error document beyond those every error has; nil when
// there are none.
func replyInfo(d bsoncore.Document) bsoncore.Document {
	elems, _ := d.Elements()
	var info []byte
	for _, el := range elems {
		switch el.Key() {
		case "ok", "index", "code", "codeName", "errmsg", "errorLabels", "$clusterTime", "operationTime":
		default:
			info = append(info, el...)
		}
	}
	if len(info) == 0 {
		return nil
	}
	return bsoncore.BuildDocument(nil, info)
}
