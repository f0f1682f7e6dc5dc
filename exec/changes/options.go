package changes

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// Spec is a parsed $changeStream stage.
type Spec struct {
	FullDocument, BeforeChange string
	ShowExpandedEvents         bool
	AllChangesForCluster       bool
	// ResumeAfter, StartAfter and StartAt (startAtOperationTime) are the resume options; at
	// most one is set.
	ResumeAfter, StartAfter *Token
	StartAt                 uint64
}

// ParseSpec parses the argument of a $changeStream stage, as MongoDB's IDL does.
func ParseSpec(v bsoncore.Value) (*Spec, error) {
	doc, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.Location50808, "$changeStream stage expects a document as argument")
	}
	s := &Spec{FullDocument: "default", BeforeChange: "off"}
	elems, _ := doc.Elements()
	resumeOptions := 0
	for _, el := range elems {
		key, val := el.Key(), el.Value()
		var err error
		switch key {
		case "fullDocument":
			s.FullDocument, err = enum(key, val, "default", "updateLookup", "whenAvailable", "required")
		case "fullDocumentBeforeChange":
			s.BeforeChange, err = enum(key, val, "off", "whenAvailable", "required")
		case "showExpandedEvents":
			s.ShowExpandedEvents, err = boolean(key, val)
		case "allChangesForCluster":
			s.AllChangesForCluster, err = boolean(key, val)
		case "resumeAfter", "startAfter":
			var t Token
			if t, err = ParseToken(key, val); err == nil {
				if key == "resumeAfter" {
					s.ResumeAfter = &t
				} else {
					s.StartAfter = &t
				}
				resumeOptions++
			}
		case "startAtOperationTime":
			t, i, ok := val.TimestampOK()
			if !ok {
				err = wrongType(key, val, "timestamp")
			}
			s.StartAt = uint64(t)<<32 | uint64(i)
			resumeOptions++
		case "allowToRunOnConfigDB", "allowToRunOnSystemNS", "showSystemEvents", "showMigrationEvents", "showRawUpdateDescription":
			_, err = boolean(key, val)
		default:
			err = mongoerr.New(mongoerr.Location40415, "BSON field '$changeStream.%s' is an unknown field.", key)
		}
		if err != nil {
			return nil, err
		}
	}
	if resumeOptions > 1 {
		return nil, mongoerr.New(mongoerr.Location40674, "Only one type of resume option is allowed, but multiple were found.")
	}
	if s.ResumeAfter != nil && s.ResumeAfter.Invalidate {
		return nil, mongoerr.New(mongoerr.InvalidResumeToken,
			"Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification.")
	}
	return s, nil
}

// enum parses a string option that takes one of values.
func enum(key string, v bsoncore.Value, values ...string) (string, error) {
	s, ok := v.StringValueOK()
	if !ok {
		return "", wrongType(key, v, "string")
	}
	for _, x := range values {
		if s == x {
			return s, nil
		}
	}
	return "", mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '$changeStream.%s' is not a valid value.", s, key)
}

// boolean parses a bool option.
func boolean(key string, v bsoncore.Value) (bool, error) {
	b, ok := v.BooleanOK()
	if !ok {
		return false, wrongType(key, v, "bool")
	}
	return b, nil
}

// wrongType is the IDL's error for an option of the wrong type.
func wrongType(key string, v bsoncore.Value, want string) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$changeStream.%s' is the wrong type '%s', expected type '%s'", key, bsonx.TypeName(v.Type), want)
}

// Start returns where a stream with spec s starts reading: after its resume token, or at its
// startAtOperationTime; resumed is false when the spec names none (the stream then starts
// at the shards' frontier when it opens: Open).
func (s *Spec) Start() (t Token, resumed bool) {
	switch {
	case s.ResumeAfter != nil:
		return *s.ResumeAfter, true
	case s.StartAfter != nil:
		return *s.StartAfter, true
	case s.StartAt != 0:
		return hwm(s.StartAt - 1), true
	}
	return Token{}, false
}
