package expr

import (
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // MongoDB knows every Olson zone; do not depend on the host's zoneinfo.

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// coerceToDate is Value::coerceToDate: dates, timestamps (their seconds) and
// ObjectIds (their creation second) as milliseconds since the epoch.
func coerceToDate(a bsoncore.Value) (int64, bool) {
	switch a.Type {
	case bsoncore.TypeDateTime:
		return dateMillis(a), true
	case bsoncore.TypeTimestamp:
		t, _, _ := a.TimestampOK()
		return int64(t) * 1000, true
	case bsoncore.TypeObjectID:
		id, _ := a.ObjectIDOK()
		return int64(uint32(id[0])<<24|uint32(id[1])<<16|uint32(id[2])<<8|uint32(id[3])) * 1000, true
	}
	return 0, false
}

// dateArg returns the date of an operator's operand or MongoDB's error (16006).
func dateArg(a bsoncore.Value) (int64, error) {
	ms, ok := coerceToDate(a)
	if !ok {
		return 0, mongoerr.New(mongoerr.Location16006, "can't convert from BSON type %s to Date", bsonx.TypeName(a.Type))
	}
	return ms, nil
}

// parseZone resolves a timezone argument: an Olson identifier, "GMT"/"UTC", or a UTC
// offset "+hh", "+hhmm" or "+hh:mm" (40485 otherwise).
func parseZone(a bsoncore.Value) (*time.Location, error) {
	s, ok := strOf(a)
	if !ok {
		return nil, mongoerr.New(mongoerr.Location40517, "timezone must evaluate to a string, found %s", bsonx.TypeName(a.Type))
	}
	if loc, ok := parseOffset(s); ok {
		return loc, nil
	}
	if s == "" || strings.ContainsAny(s, " \\") || strings.HasPrefix(s, ".") || strings.Contains(s, "..") {
		return nil, mongoerr.New(mongoerr.Location40485, "unrecognized time zone identifier: \"%s\"", s)
	}
	loc, err := time.LoadLocation(s)
	if err != nil || strings.EqualFold(s, "local") {
		return nil, mongoerr.New(mongoerr.Location40485, "unrecognized time zone identifier: \"%s\"", s)
	}
	return loc, nil
}

// parseOffset reads "+hh", "+hhmm" or "+hh:mm".
func parseOffset(s string) (*time.Location, bool) {
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return nil, false
	}
	digits := strings.Replace(s[1:], ":", "", 1)
	if len(digits) != 2 && len(digits) != 4 || strings.Trim(digits, "0123456789") != "" {
		return nil, false
	}
	if len(s) == 6 && s[3] != ':' || len(s) == 5 && strings.Contains(s, ":") {
		return nil, false
	}
	h, _ := strconv.Atoi(digits[:2])
	m := 0
	if len(digits) == 4 {
		m, _ = strconv.Atoi(digits[2:])
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return time.FixedZone(s, off), true
}

// zoneOf evaluates an optional timezone node: UTC when absent; null (isNull) when it
// evaluates to null or missing.
func zoneOf(n node, v *Vars) (loc *time.Location, isNull bool, err error) {
	if n == nil {
		return time.UTC, false, nil
	}
	z, err := n.eval(v)
	if err != nil {
		return nil, false, err
	}
	if nullish(z) {
		return nil, true, nil
	}
	loc, err = parseZone(z)
	return loc, false, err
}

// localTime returns ms in loc.
func localTime(ms int64, loc *time.Location) time.Time { return time.UnixMilli(ms).In(loc) }

// datePartNode is one of $year, $month, ... with a date and an optional timezone.
type datePartNode struct {
	date, tz node
	part     func(t time.Time) int
}

func (n *datePartNode) eval(v *Vars) (bsoncore.Value, error) {
	d, err := n.date.eval(v)
	if err != nil {
		return missing, err
	}
	loc, tzNull, err := zoneOf(n.tz, v)
	if err != nil {
		return missing, err
	}
	if nullish(d) || tzNull {
		return valNull, nil
	}
	ms, err := dateArg(d)
	if err != nil {
		return missing, err
	}
	return v.int32Val(int32(n.part(localTime(ms, loc)))), nil
}

// parseDatePart compiles a date part operator: an expression, a one-element array, or
// {date, timezone}.
func parseDatePart(part func(t time.Time) int) parseFn {
	return func(p *parser, name string, arg bsoncore.Value) (node, error) {
		n := &datePartNode{part: part}
		var err error
		switch {
		case arg.Type == bsoncore.TypeEmbeddedDocument && isDateSpec(arg):
			for _, f := range docFields(arg) {
				var x node
				if x, err = p.parse(f.val); err != nil {
					return nil, err
				}
				switch f.name {
				case "date":
					n.date = x
				case "timezone":
					n.tz = x
				default:
					return nil, mongoerr.New(mongoerr.Location40535, "unrecognized option to %s: \"%s\"", name, f.name)
				}
			}
			if n.date == nil {
				return nil, mongoerr.New(mongoerr.Location40539, "missing 'date' argument to %s, provided: %s", name, arg.String())
			}
		case arg.Type == bsoncore.TypeArray:
			vals := arrayValues(arg)
			if len(vals) != 1 {
				return nil, mongoerr.New(mongoerr.Location40536, "%s accepts exactly one argument if given an array, but was given %d", name, len(vals))
			}
			n.date, err = p.parse(vals[0])
		default:
			n.date, err = p.parse(arg)
		}
		if err != nil {
			return nil, err
		}
		if isConst(n.date, n.tz) {
			return fold(n), nil
		}
		return n, nil
	}
}

// isDateSpec reports whether an object argument is the {date, timezone} form rather
// than an expression ({$op: ...} or an expression object).
func isDateSpec(arg bsoncore.Value) bool {
	fields := docFields(arg)
	return len(fields) == 0 || !strings.HasPrefix(fields[0].name, "$")
}

// The date parts, in the argument's timezone.
var (
	partYear        = func(t time.Time) int { return t.Year() }
	partMonth       = func(t time.Time) int { return int(t.Month()) }
	partDayOfMonth  = func(t time.Time) int { return t.Day() }
	partHour        = func(t time.Time) int { return t.Hour() }
	partMinute      = func(t time.Time) int { return t.Minute() }
	partSecond      = func(t time.Time) int { return t.Second() }
	partMillisecond = func(t time.Time) int { return t.Nanosecond() / 1e6 }
	partDayOfWeek   = func(t time.Time) int { return int(t.Weekday()) + 1 }
	partDayOfYear   = func(t time.Time) int { return t.YearDay() }
	partWeek        = func(t time.Time) int { return (t.YearDay() + 6 - int(t.Weekday())) / 7 }
	partISOWeek     = func(t time.Time) int { _, w := t.ISOWeek(); return w }
	partISOWeekYear = func(t time.Time) int { y, _ := t.ISOWeek(); return y }
	partISODay      = func(t time.Time) int { return (int(t.Weekday())+6)%7 + 1 }
)
