package params

import (
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// The cluster-wide default read and write concerns (setDefaultRWConcern, MongoDB's CWRWC):
// the concerns an operation that carries none of its own runs with. MongoDB keeps them in
// config.settings as {_id: "ReadWriteConcernDefaults", defaultReadConcern,
// defaultWriteConcern, updateOpTime, updateWallClockTime}; so does cleave (ToDoc, ParseDoc),
// and the server publishes the ones it applies here. A default that was never set is
// implicit: readConcern {level: "local"}, writeConcern {w: "majority", wtimeout: 0}, which
// is what cleave does without one, so nothing is applied then.

// RWDefaultsID is the _id of the defaults' document in config.settings.
const RWDefaultsID = "ReadWriteConcernDefaults"

// RWConcernDefaults are one version of the defaults.
type RWConcernDefaults struct {
	// ReadConcern and WriteConcern are the defaults set, nil when never set. A write
	// concern is kept as MongoDB writes it back: {w, j (when given), wtimeout}.
	ReadConcern, WriteConcern bsoncore.Document
	// UpdateOpTime is the cluster time of the change (seconds << 32 | increment), and
	// UpdateWallClock its wall-clock time; both zero when nothing was ever set.
	UpdateOpTime    uint64
	UpdateWallClock time.Time
}

// RWDefaults holds the defaults this node applies now, and when it learned them.
type RWDefaults struct {
	cur   atomic.Pointer[RWConcernDefaults]
	local atomic.Int64 // unix nanoseconds of the last Store
}

// Load returns the defaults applied now (never nil; empty when none was set).
func (d *RWDefaults) Load() *RWConcernDefaults {
	if c := d.cur.Load(); c != nil {
		return c
	}
	return &RWConcernDefaults{}
}

// Store makes c the defaults applied from now on.
func (d *RWDefaults) Store(c *RWConcernDefaults) {
	d.cur.Store(c)
	d.local.Store(time.Now().UnixNano())
}

// StoreNewer makes c the defaults applied from now on unless those applied now are newer
// (a later UpdateOpTime): a read of the cluster's copy that began before a change, and ends
// after the change was pushed to this node, must not bring the old defaults back. Either
// way the copy is current as of now (LocalUpdate).
func (d *RWDefaults) StoreNewer(c *RWConcernDefaults) {
	for {
		cur := d.cur.Load()
		if cur != nil && cur.UpdateOpTime > c.UpdateOpTime {
			break
		}
		if d.cur.CompareAndSwap(cur, c) {
			break
		}
	}
	d.local.Store(time.Now().UnixNano())
}

// LocalUpdate is when this node last stored its defaults (localUpdateWallClockTime); the
// zero time when it never did.
func (d *RWDefaults) LocalUpdate() time.Time {
	if n := d.local.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// NextRWDefaults returns the defaults after {setDefaultRWConcern, defaultReadConcern: rc,
// defaultWriteConcern: wc} (a nil document: the field was absent) over cur, at cluster time
// opTime and wall-clock time now, with MongoDB's refusals: neither field; a read concern
// level snapshot or linearizable, or with afterOpTime, afterClusterTime or atClusterTime;
// an unacknowledged (w: 0) write concern; a provenance in either; the write concern unset
// ({}) once set. An empty read concern ({}) unsets the read concern.
func NextRWDefaults(cur *RWConcernDefaults, rc, wc bsoncore.Document, opTime uint64, now time.Time) (*RWConcernDefaults, error) {
	if rc == nil && wc == nil {
		return nil, mongoerr.New(mongoerr.BadValue, `At least one of the "defaultReadConcern" or "defaultWriteConcern" fields must be present`)
	}
	next := &RWConcernDefaults{ReadConcern: cur.ReadConcern, WriteConcern: cur.WriteConcern, UpdateOpTime: opTime, UpdateWallClock: now}
	if rc != nil {
		norm, err := defaultReadConcern(rc)
		if err != nil {
			return nil, err
		}
		next.ReadConcern = norm
	}
	if wc != nil {
		norm, err := defaultWriteConcern(wc)
		if err != nil {
			return nil, err
		}
		if norm == nil && cur.WriteConcern != nil {
			return nil, mongoerr.New(mongoerr.IllegalOperation, "The global default write concern cannot be unset once it is set.")
		}
		next.WriteConcern = norm
	}
	return next, nil
}

// readConcernLevels are the levels a read concern may name.
var readConcernLevels = map[string]bool{"local": true, "majority": true, "available": true, "linearizable": true, "snapshot": true}

// defaultReadConcern checks rc as a default read concern and returns it as kept: {level},
// nil for {} (unset).
func defaultReadConcern(rc bsoncore.Document) (bsoncore.Document, error) {
	elems, err := rc.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "defaultReadConcern is not a valid document")
	}
	level := ""
	for _, e := range elems {
		switch key := e.Key(); key {
		case "level":
			s, ok := e.Value().StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'readConcern.level' is the wrong type '%s', expected type 'string'", typeName(e.Value().Type))
			}
			if !readConcernLevels[s] {
				return nil, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field 'readConcern.level' is not a valid value.", s)
			}
			if s == "snapshot" || s == "linearizable" {
				return nil, mongoerr.New(mongoerr.BadValue, "level: '%s' is not suitable for the default read concern", s)
			}
			level = s
		case "afterOpTime", "afterClusterTime", "atClusterTime":
			return nil, mongoerr.New(mongoerr.BadValue, "'%s' is not suitable for the default read concern", key)
		case "provenance":
			return nil, mongoerr.New(mongoerr.BadValue, "'provenance' must be unset in default read concern")
		default:
			return nil, mongoerr.New(mongoerr.Location40415, "BSON field 'readConcern.%s' is an unknown field.", key)
		}
	}
	if level == "" {
		return nil, nil
	}
	return bsoncore.NewDocumentBuilder().AppendString("level", level).Build(), nil
}

// defaultWriteConcern checks wc as a default write concern and returns it as kept, nil for
// {} (unset).
func defaultWriteConcern(wc bsoncore.Document) (bsoncore.Document, error) {
	elems, err := wc.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.FailedToParse, "defaultWriteConcern is not a valid document")
	}
	if len(elems) == 0 {
		return nil, nil
	}
	var w, j bsoncore.Value
	var wtimeout int64
	for _, e := range elems {
		v := e.Value()
		switch key := e.Key(); key {
		case "w":
			if _, isNum := v.AsInt64OK(); !isNum && v.Type != bsoncore.TypeString {
				return nil, mongoerr.New(mongoerr.FailedToParse, "w has to be a number or string")
			}
			w = v
		case "j":
			if _, ok := v.BooleanOK(); !ok {
				if _, isNum := v.AsInt64OK(); !isNum {
					return nil, mongoerr.New(mongoerr.FailedToParse, "j must be numeric or a boolean value")
				}
			}
			j = v
		case "wtimeout":
			n, ok := v.AsInt64OK()
			if !ok {
				return nil, mongoerr.New(mongoerr.FailedToParse, "wtimeout must be a number")
			}
			wtimeout = n
		case "fsync", "wElectionId", "wOpTime", "getLastError":
		case "provenance":
			return nil, mongoerr.New(mongoerr.BadValue, "'provenance' must be unset in default write concern")
		default:
			return nil, mongoerr.New(mongoerr.FailedToParse, "unrecognized write concern field: %s", key)
		}
	}
	b := bsoncore.NewDocumentBuilder()
	switch n, isNum := w.AsInt64OK(); {
	case isNum && n < 0:
		return nil, mongoerr.New(mongoerr.FailedToParse, "w has to be a non-negative number and not greater than 50; found: %d", n)
	case isNum && n == 0:
		return nil, mongoerr.New(mongoerr.BadValue, "Unacknowledged write concern is not suitable for the default write concern")
	case isNum:
		b.AppendInt32("w", int32(n))
	case w.Type == bsoncore.TypeString:
		b.AppendString("w", w.StringValue())
	}
	if j.Type != 0 {
		jb, ok := j.BooleanOK()
		if !ok {
			n, _ := j.AsInt64OK()
			jb = n != 0
		}
		b.AppendBoolean("j", jb)
	}
	return b.AppendInt32("wtimeout", int32(wtimeout)).Build(), nil
}

// typeName is MongoDB's name of a BSON type, for the messages above.
func typeName(t bsoncore.Type) string {
	switch t {
	case bsoncore.TypeInt32:
		return "int"
	case bsoncore.TypeInt64:
		return "long"
	case bsoncore.TypeDouble:
		return "double"
	case bsoncore.TypeBoolean:
		return "bool"
	case bsoncore.TypeEmbeddedDocument:
		return "object"
	case bsoncore.TypeArray:
		return "array"
	case bsoncore.TypeNull:
		return "null"
	}
	return t.String()
}

// ToDoc returns the defaults as config.settings keeps them.
func (c *RWConcernDefaults) ToDoc() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("_id", RWDefaultsID)
	if c.ReadConcern != nil {
		b.AppendDocument("defaultReadConcern", c.ReadConcern)
	}
	if c.WriteConcern != nil {
		b.AppendDocument("defaultWriteConcern", c.WriteConcern)
	}
	return b.AppendTimestamp("updateOpTime", uint32(c.UpdateOpTime>>32), uint32(c.UpdateOpTime)).
		AppendDateTime("updateWallClockTime", c.UpdateWallClock.UnixMilli()).Build()
}

// ParseRWDefaults reads the defaults from their config.settings document (nil: none set).
func ParseRWDefaults(doc bsoncore.Document) *RWConcernDefaults {
	c := &RWConcernDefaults{}
	if doc == nil {
		return c
	}
	c.ReadConcern, _ = doc.Lookup("defaultReadConcern").DocumentOK()
	c.WriteConcern, _ = doc.Lookup("defaultWriteConcern").DocumentOK()
	if t, i, ok := doc.Lookup("updateOpTime").TimestampOK(); ok {
		c.UpdateOpTime = uint64(t)<<32 | uint64(i)
	}
	if ms, ok := doc.Lookup("updateWallClockTime").DateTimeOK(); ok {
		c.UpdateWallClock = time.UnixMilli(ms)
	}
	return c
}
