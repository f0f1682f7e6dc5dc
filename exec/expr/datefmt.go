package expr

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// namedNode is an operator with named sub-expressions, evaluated by fn.
type namedNode struct {
	args map[string]node
	fn   func(v *Vars, args map[string]node) (bsoncore.Value, error)
}

func (n *namedNode) eval(v *Vars) (bsoncore.Value, error) { return n.fn(v, n.args) }

// parseNamed compiles an operator with named arguments.
func parseNamed(known, required []string, objCode, unknownCode, missingCode mongoerr.Code,
	fn func(v *Vars, args map[string]node) (bsoncore.Value, error)) parseFn {
	return func(p *parser, name string, arg bsoncore.Value) (node, error) {
		args, err := p.namedArgs(name, arg, known, required, objCode, unknownCode, missingCode)
		if err != nil {
			return nil, err
		}
		n := &namedNode{args: args, fn: fn}
		for _, a := range args {
			if !isConst(a) {
				return n, nil
			}
		}
		return fold(n), nil
	}
}

// evalArgs evaluates the named arguments present; absent ones are missing.
func evalArgs(v *Vars, args map[string]node, names ...string) (map[string]bsoncore.Value, error) {
	out := make(map[string]bsoncore.Value, len(names))
	for _, k := range names {
		x, err := evalOpt(args[k], v)
		if err != nil {
			return nil, err
		}
		out[k] = x
	}
	return out, nil
}

// isoFormatZ and isoFormat are $dateToString's default formats (UTC and other zones).
const (
	isoFormatZ = "%Y-%m-%dT%H:%M:%S.%LZ"
	isoFormat  = "%Y-%m-%dT%H:%M:%S.%L"
)

// dateToString is $dateToString: {date, format, timezone, onNull}.
func dateToString(v *Vars, args map[string]node) (bsoncore.Value, error) {
	a, err := evalArgs(v, args, "date", "format", "timezone")
	if err != nil {
		return missing, err
	}
	format := isoFormatZ
	if args["timezone"] != nil {
		format = isoFormat
	}
	if f := a["format"]; !nullish(f) {
		s, ok := f.StringValueOK()
		if !ok {
			return missing, mongoerr.New(mongoerr.Location18533, "$dateToString requires that 'format' be a string, found: %s with value %s", bsonx.TypeName(f.Type), f.String())
		}
		if err := validateFormat(s); err != nil {
			return missing, err
		}
		format = s
	} else if args["format"] != nil {
		return valNull, nil
	}
	if nullish(a["date"]) {
		if args["onNull"] != nil {
			return args["onNull"].eval(v)
		}
		return valNull, nil
	}
	loc, tzNull, err := zoneOf(args["timezone"], v)
	if err != nil || tzNull {
		return valNull, err
	}
	ms, err := dateArg(a["date"])
	if err != nil {
		return missing, err
	}
	return v.stringVal(formatDate(format, localTime(ms, loc))), nil
}

// validateFormat checks the % specifiers of a format string.
func validateFormat(f string) error {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i+1 >= len(f) {
			return mongoerr.New(mongoerr.Location18535, "Unmatched '%%' at end of format string")
		}
		i++
		if !strings.ContainsRune("dGHjLmMSuUVwYzZbB%", rune(f[i])) {
			return mongoerr.New(mongoerr.Location18536, "Invalid format character '%%%c' in format string", f[i])
		}
	}
	return nil
}

// formatDate expands MongoDB's date format specifiers.
func formatDate(f string, t time.Time) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 >= len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		_, off := t.Zone()
		switch f[i] {
		case 'd':
			fmt.Fprintf(&b, "%02d", t.Day())
		case 'G':
			fmt.Fprintf(&b, "%04d", partISOWeekYear(t))
		case 'H':
			fmt.Fprintf(&b, "%02d", t.Hour())
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'L':
			fmt.Fprintf(&b, "%03d", t.Nanosecond()/1e6)
		case 'm':
			fmt.Fprintf(&b, "%02d", int(t.Month()))
		case 'M':
			fmt.Fprintf(&b, "%02d", t.Minute())
		case 'S':
			fmt.Fprintf(&b, "%02d", t.Second())
		case 'u':
			fmt.Fprintf(&b, "%d", partISODay(t))
		case 'U':
			fmt.Fprintf(&b, "%02d", partWeek(t))
		case 'V':
			fmt.Fprintf(&b, "%02d", partISOWeek(t))
		case 'w':
			fmt.Fprintf(&b, "%d", int(t.Weekday())+1)
		case 'Y':
			fmt.Fprintf(&b, "%04d", t.Year())
		case 'z':
			sign := '+'
			if off < 0 {
				sign, off = '-', -off
			}
			fmt.Fprintf(&b, "%c%02d%02d", sign, off/3600, off%3600/60)
		case 'Z':
			fmt.Fprintf(&b, "%+d", off/60)
		case 'b':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		default:
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

// dateToParts is $dateToParts: {date, timezone, iso8601}.
func dateToParts(v *Vars, args map[string]node) (bsoncore.Value, error) {
	a, err := evalArgs(v, args, "date", "iso8601")
	if err != nil {
		return missing, err
	}
	loc, tzNull, err := zoneOf(args["timezone"], v)
	if err != nil {
		return missing, err
	}
	iso := false
	if x := a["iso8601"]; !isMissing(x) {
		b, ok := x.BooleanOK()
		if !ok {
			return missing, mongoerr.New(mongoerr.Location40521, "iso8601 must evaluate to a bool, found %s", bsonx.TypeName(x.Type))
		}
		iso = b
	}
	if nullish(a["date"]) || tzNull {
		return valNull, nil
	}
	ms, err := dateArg(a["date"])
	if err != nil {
		return missing, err
	}
	t := localTime(ms, loc)
	i32 := func(f func(time.Time) int) bsoncore.Value { return v.int32Val(int32(f(t))) }
	var fields []field
	if iso {
		fields = []field{{"isoWeekYear", i32(partISOWeekYear)}, {"isoWeek", i32(partISOWeek)}, {"isoDayOfWeek", i32(partISODay)}}
	} else {
		fields = []field{{"year", i32(partYear)}, {"month", i32(partMonth)}, {"day", i32(partDayOfMonth)}}
	}
	fields = append(fields, field{"hour", i32(partHour)}, field{"minute", i32(partMinute)},
		field{"second", i32(partSecond)}, field{"millisecond", i32(partMillisecond)})
	return v.docVal(fields), nil
}

// dateFromString is $dateFromString: {dateString, format, timezone, onError, onNull}.
func dateFromString(v *Vars, args map[string]node) (bsoncore.Value, error) {
	a, err := evalArgs(v, args, "dateString", "format")
	if err != nil {
		return missing, err
	}
	if f := a["format"]; args["format"] != nil {
		if nullish(f) {
			return valNull, nil
		}
		if f.Type != bsoncore.TypeString {
			return missing, mongoerr.New(mongoerr.Location40684, "$dateFromString requires that 'format' be a string, found: %s with value %s", bsonx.TypeName(f.Type), f.String())
		}
		if err := validateFormat(f.StringValue()); err != nil {
			return missing, err
		}
	}
	loc, tzNull, err := zoneOf(args["timezone"], v)
	if err != nil {
		return missing, err
	}
	ds := a["dateString"]
	if nullish(ds) {
		if args["onNull"] != nil {
			return args["onNull"].eval(v)
		}
		return valNull, nil
	}
	if tzNull {
		return valNull, nil
	}
	var ms int64
	s, ok := ds.StringValueOK()
	switch {
	case !ok:
		err = mongoerr.New(mongoerr.ConversionFailure, "$dateFromString requires that 'dateString' be a string, found: %s with value %s", bsonx.TypeName(ds.Type), ds.String())
	case args["format"] != nil:
		ms, err = parseWithFormat(s, a["format"].StringValue(), loc)
	default:
		ms, err = parseISODate(s, loc)
	}
	if err != nil {
		if args["onError"] != nil {
			return args["onError"].eval(v)
		}
		return missing, err
	}
	return v.dateVal(ms), nil
}

// dateParseError is $dateFromString's failure.
func dateParseError(s, why string) error {
	return mongoerr.New(mongoerr.ConversionFailure, "Error parsing date string '%s'; %s", s, why)
}

// isoLayouts are the date string shapes parsed without a format, tried in order.
var isoLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999Z0700", "2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04Z07:00",
	"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02", "2006/01/02 15:04:05", "2006/01/02",
	"Jan 2, 2006", "January 2, 2006", "2 January 2006", "Mon, 2 Jan 2006 15:04:05 -0700",
}

// parseISODate parses the common date string forms MongoDB's (timelib) parser accepts.
// A string carrying its own offset ignores loc.
func parseISODate(s string, loc *time.Location) (int64, error) {
	str := strings.TrimSpace(s)
	if strings.HasSuffix(str, "Z") && !strings.Contains(str, "T") && !strings.Contains(str, " ") {
		return 0, dateParseError(s, "Unexpected character")
	}
	for _, layout := range isoLayouts {
		t, err := time.ParseInLocation(layout, str, loc)
		if err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, dateParseError(s, "The string could not be parsed as a date")
}

// parseWithFormat parses s by MongoDB's format specifiers.
func parseWithFormat(s, format string, loc *time.Location) (int64, error) {
	year, month, day, hour, minute, sec, ms := 1970, 1, 1, 0, 0, 0, 0
	off, hasOff := 0, false
	i := 0
	num := func(maxDigits int) (int, bool) {
		j := i
		neg := false
		if j < len(s) && (s[j] == '-' || s[j] == '+') && maxDigits > 4 {
			neg = s[j] == '-'
			j++
		}
		k := j
		for k < len(s) && k-j < maxDigits && s[k] >= '0' && s[k] <= '9' {
			k++
		}
		if k == j {
			return 0, false
		}
		n, _ := strconv.Atoi(s[j:k])
		i = k
		if neg {
			n = -n
		}
		return n, true
	}
	for f := 0; f < len(format); f++ {
		if format[f] != '%' {
			if i >= len(s) || s[i] != format[f] {
				return 0, dateParseError(s, "Format literal not found")
			}
			i++
			continue
		}
		f++
		var ok bool
		switch format[f] {
		case 'Y':
			year, ok = num(4)
		case 'm':
			month, ok = num(2)
		case 'd':
			day, ok = num(2)
		case 'H':
			hour, ok = num(2)
		case 'M':
			minute, ok = num(2)
		case 'S':
			sec, ok = num(2)
		case 'L':
			ms, ok = num(3)
		case 'j':
			var yd int
			if yd, ok = num(3); ok {
				month, day = 1, yd
			}
		case 'z', 'Z':
			off, ok = parseFormatOffset(s, &i, format[f] == 'Z')
			hasOff = hasOff || ok
		case '%':
			ok = i < len(s) && s[i] == '%'
			i++
		default:
			return 0, dateParseError(s, fmt.Sprintf("Format specifier %%%c is not supported when parsing", format[f]))
		}
		if !ok {
			return 0, dateParseError(s, "Unexpected data")
		}
	}
	if i != len(s) {
		return 0, dateParseError(s, "Trailing data")
	}
	if hasOff {
		loc = time.FixedZone("", off)
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, ms*1e6, loc)
	return t.UnixMilli(), nil
}

// parseFormatOffset reads %z (+hhmm) or %Z (minutes) at s[*i:].
func parseFormatOffset(s string, i *int, minutes bool) (int, bool) {
	if *i >= len(s) || (s[*i] != '+' && s[*i] != '-') {
		return 0, false
	}
	sign := 1
	if s[*i] == '-' {
		sign = -1
	}
	j := *i + 1
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	n, err := strconv.Atoi(s[j:k])
	if err != nil {
		return 0, false
	}
	*i = k
	if minutes {
		return sign * n * 60, true
	}
	return sign * (n/100*3600 + n%100*60), true
}
