package auth

import (
	"errors"

	"github.com/xdg-go/stringprep"
)

// PrepError is a password SASLprep (RFC 4013) refuses. Reason is the name ICU gives the
// failure (U_STRINGPREP_UNASSIGNED_ERROR, U_STRINGPREP_PROHIBITED_ERROR or
// U_STRINGPREP_CHECK_BIDI_ERROR), which MongoDB, preparing passwords with ICU, puts in its
// message.
type PrepError struct {
	Reason string
	cause  error
}

func (e *PrepError) Error() string { return "auth: SASLprep: " + e.Reason }
func (e *PrepError) Unwrap() error { return e.cause }

// SASLprep prepares a SCRAM-SHA-256 password as MongoDB's ICU profile does, and names its
// failures as ICU does:
//
//	SASLprep("a\u00A0b") // "a b", nil
//	SASLprep("a\u0007")  // "", &PrepError{Reason: "U_STRINGPREP_PROHIBITED_ERROR"}
//
// ICU finds unassigned code points while mapping, before it looks for prohibited ones, so
// an unassigned code point anywhere wins over a prohibited one earlier in the string.
func SASLprep(s string) (string, error) {
	for _, r := range s {
		if stringprep.TableA1.Contains(r) {
			return "", &PrepError{Reason: "U_STRINGPREP_UNASSIGNED_ERROR"}
		}
	}
	out, err := stringprep.SASLprep.Prepare(s)
	if err == nil {
		return out, nil
	}
	reason := "U_STRINGPREP_PROHIBITED_ERROR"
	var se stringprep.Error
	if errors.As(err, &se) && se.Msg != "prohibited character" {
		reason = "U_STRINGPREP_CHECK_BIDI_ERROR" // the other errors are RFC 3454 §6's
	}
	return "", &PrepError{Reason: reason, cause: err}
}
