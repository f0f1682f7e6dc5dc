package expr

import (
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx"
	"github.com/cleavedb/cleave/wire/mongoerr"
)

// dateFromParts is $dateFromParts: {year, month, day, hour, minute, second,
// millisecond, timezone} or the ISO form {isoWeekYear, isoWeek, isoDayOfWeek, ...}.
// Parts out of their usual range carry over (month 14 is February of the next year).
func dateFromParts(v *Vars, args map[string]node) (bsoncore.Value, error) {
	iso := args["isoWeekYear"] != nil
	if !iso && args["year"] == nil {
		return missing, mongoerr.New(mongoerr.Location40516, "$dateFromParts requires either 'year' or 'isoWeekYear' to be present")
	}
	if iso && (args["year"] != nil || args["month"] != nil || args["day"] != nil) {
		return missing, mongoerr.New(mongoerr.Location40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
	}
	if !iso && (args["isoWeek"] != nil || args["isoDayOfWeek"] != nil) {
		return missing, mongoerr.New(mongoerr.Location40489, "$dateFromParts does not allow mixing natural dates with ISO dates")
	}
	names := []string{"year", "month", "day", "hour", "minute", "second", "millisecond"}
	if iso {
		names = []string{"isoWeekYear", "isoWeek", "isoDayOfWeek", "hour", "minute", "second", "millisecond"}
	}
	defaults := []int64{1970, 1, 1, 0, 0, 0, 0}
	if iso {
		defaults[0] = 0
	}
	parts := make([]int64, len(names))
	for i, k := range names {
		x, err := evalOpt(args[k], v)
		if err != nil {
			return missing, err
		}
		n, isNull, err := datePart(k, x, defaults[i], args[k] != nil)
		if err != nil || isNull {
			return valNull, err
		}
		parts[i] = n
	}
	loc, tzNull, err := zoneOf(args["timezone"], v)
	if err != nil || tzNull {
		return valNull, err
	}
	var t time.Time
	if iso {
		// ISO week 1 holds January 4th; day 1 is Monday.
		jan4 := time.Date(int(parts[0]), 1, 4, 0, 0, 0, 0, loc)
		monday := jan4.AddDate(0, 0, -((int(jan4.Weekday()) + 6) % 7))
		t = time.Date(monday.Year(), monday.Month(), monday.Day()+int((parts[1]-1)*7+parts[2]-1),
			int(parts[3]), int(parts[4]), int(parts[5]), 0, loc)
	} else {
		t = time.Date(int(parts[0]), time.Month(parts[1]), int(parts[2]), int(parts[3]), int(parts[4]), int(parts[5]), 0, loc)
	}
	return v.dateVal(t.UnixMilli() + parts[6]), nil
}

// datePart validates one part of $dateFromParts: an integral number, the year (or ISO
// week year) in [1, 9999] and the others in [-32768, 32767].
func datePart(name string, x bsoncore.Value, def int64, given bool) (n int64, isNull bool, err error) {
	if !given {
		return def, false, nil
	}
	if nullish(x) {
		return 0, true, nil
	}
	n, ok := integral(x)
	if !ok {
		return 0, false, mongoerr.New(mongoerr.Location40515, "'%s' must evaluate to an integer, found %s with value %s", name, bsonx.TypeName(x.Type), x.String())
	}
	if name == "year" || name == "isoWeekYear" {
		if n < 1 || n > 9999 {
			return 0, false, mongoerr.New(mongoerr.Location40523, "'%s' must evaluate to an integer in the range 1 to 9999, found %d", name, n)
		}
	} else if n < -32768 || n > 32767 {
		return 0, false, mongoerr.New(mongoerr.Location31034, "'%s' must evaluate to a value in the range [-32768, 32767]; value %d is not in range", name, n)
	}
	return n, false, nil
}

// timeUnits are the units of $dateAdd, $dateDiff and $dateTrunc.
var timeUnits = map[string]bool{"year": true, "quarter": true, "month": true, "week": true, "day": true,
	"hour": true, "minute": true, "second": true, "millisecond": true}

// unitArg validates a unit argument.
func unitArg(name string, x bsoncore.Value) (string, error) {
	s, ok := x.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.Location5439013, "%s requires 'unit' to be a string, but got %s", name, bsonx.TypeName(x.Type))
	}
	if !timeUnits[s] {
		return "", mongoerr.New(mongoerr.FailedToParse, "%s parameter 'unit' value parsing failed :: caused by :: unknown time unit value: %s", name, s)
	}
	return s, nil
}

// addUnits adds amount units to t (in t's zone); months clamp to the month's last day
// (January 31st plus one month is the last day of February).
func addUnits(t time.Time, unit string, amount int64) time.Time {
	switch unit {
	case "year", "quarter", "month":
		months := amount
		switch unit {
		case "year":
			months *= 12
		case "quarter":
			months *= 3
		}
		y, m, d := t.Date()
		total := int64(y)*12 + int64(m-1) + months
		ny, nm := int(total/12), time.Month(total%12+1)
		if total < 0 && total%12 != 0 {
			ny, nm = int(total/12)-1, time.Month(total%12+13)
		}
		last := time.Date(ny, nm+1, 0, 0, 0, 0, 0, t.Location()).Day()
		return time.Date(ny, nm, min(d, last), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
	case "week":
		return t.AddDate(0, 0, int(amount*7))
	case "day":
		return t.AddDate(0, 0, int(amount))
	}
	return t.Add(time.Duration(amount) * unitDuration(unit))
}

// unitDuration is the length of a fixed-length unit.
func unitDuration(unit string) time.Duration {
	switch unit {
	case "hour":
		return time.Hour
	case "minute":
		return time.Minute
	case "second":
		return time.Second
	}
	return time.Millisecond
}

// dateAddOp returns $dateAdd, or $dateSubtract (sign −1): {startDate, unit, amount,
// timezone}.
func dateAddOp(name string, sign int64) func(v *Vars, args map[string]node) (bsoncore.Value, error) {
	return func(v *Vars, args map[string]node) (bsoncore.Value, error) {
		a, err := evalArgs(v, args, "startDate", "unit", "amount")
		if err != nil {
			return missing, err
		}
		loc, tzNull, err := zoneOf(args["timezone"], v)
		if err != nil {
			return missing, err
		}
		if nullish(a["startDate"]) || nullish(a["unit"]) || nullish(a["amount"]) || tzNull {
			return valNull, nil
		}
		start, ok := coerceToDate(a["startDate"])
		if !ok {
			return missing, mongoerr.New(mongoerr.Location5166403, "%s requires startDate to be convertible to a date", name)
		}
		unit, err := unitArg(name, a["unit"])
		if err != nil {
			return missing, err
		}
		amount, ok := integral(a["amount"])
		if !ok {
			return missing, mongoerr.New(mongoerr.Location5166402, "%s expects integer amount of time units", name)
		}
		t := addUnits(localTime(start, loc), unit, sign*amount)
		if t.Year() > 292000000 || t.Year() < -292000000 {
			return missing, mongoerr.New(mongoerr.Location5166406, "%s overflowed", name)
		}
		return v.dateVal(t.UnixMilli()), nil
	}
}

// weekStart parses startOfWeek (default Sunday).
func weekStart(x bsoncore.Value) (time.Weekday, error) {
	if isMissing(x) {
		return time.Sunday, nil
	}
	s, ok := x.StringValueOK()
	if ok {
		for d := time.Sunday; d <= time.Saturday; d++ {
			name := strings.ToLower(d.String())
			if strings.EqualFold(s, name) || strings.EqualFold(s, name[:3]) {
				return d, nil
			}
		}
	}
	return 0, mongoerr.New(mongoerr.Location5439017, "unknown startOfWeek value: %s", x.String())
}

// unitsBetween counts the unit boundaries crossed from a to b in their zone, as
// $dateDiff does.
func unitsBetween(a, b time.Time, unit string, sow time.Weekday) int64 {
	switch unit {
	case "year":
		return int64(b.Year() - a.Year())
	case "quarter":
		return int64(b.Year()-a.Year())*4 + int64((int(b.Month())-1)/3-(int(a.Month())-1)/3)
	case "month":
		return int64(b.Year()-a.Year())*12 + int64(b.Month()-a.Month())
	case "week", "day":
		days := civilDays(b) - civilDays(a)
		if unit == "day" {
			return days
		}
		shift := func(t time.Time) int64 { return (int64(t.Weekday()) - int64(sow) + 7) % 7 }
		return (days - shift(b) + shift(a)) / 7
	}
	d := int64(unitDuration(unit) / time.Millisecond)
	_, ao := a.Zone()
	_, bo := b.Zone()
	la, lb := a.UnixMilli()+int64(ao)*1000, b.UnixMilli()+int64(bo)*1000
	return floorDiv(lb, d) - floorDiv(la, d)
}

// civilDays numbers the local calendar day of t.
func civilDays(t time.Time) int64 {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400
}

// floorDiv divides rounding toward negative infinity.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// dateDiff is $dateDiff: {startDate, endDate, unit, timezone, startOfWeek}, a long.
func dateDiff(v *Vars, args map[string]node) (bsoncore.Value, error) {
	a, err := evalArgs(v, args, "startDate", "endDate", "unit", "startOfWeek")
	if err != nil {
		return missing, err
	}
	loc, tzNull, err := zoneOf(args["timezone"], v)
	if err != nil {
		return missing, err
	}
	if nullish(a["startDate"]) || nullish(a["endDate"]) || nullish(a["unit"]) || tzNull {
		return valNull, nil
	}
	start, ok1 := coerceToDate(a["startDate"])
	end, ok2 := coerceToDate(a["endDate"])
	if !ok1 || !ok2 {
		bad := "startDate"
		if ok1 {
			bad = "endDate"
		}
		return missing, mongoerr.New(mongoerr.Location5166307, "$dateDiff requires '%s' to be a date, but got %s", bad, bsonx.TypeName(a[bad].Type))
	}
	unit, err := unitArg("$dateDiff", a["unit"])
	if err != nil {
		return missing, err
	}
	sow, err := weekStart(a["startOfWeek"])
	if err != nil {
		return missing, err
	}
	return v.int64Val(unitsBetween(localTime(start, loc), localTime(end, loc), unit, sow)), nil
}

// dateTrunc is $dateTrunc: {date, unit, binSize, timezone, startOfWeek}.
func dateTrunc(v *Vars, args map[string]node) (bsoncore.Value, error) {
	a, err := evalArgs(v, args, "date", "unit", "binSize", "startOfWeek")
	if err != nil {
		return missing, err
	}
	loc, tzNull, err := zoneOf(args["timezone"], v)
	if err != nil {
		return missing, err
	}
	if nullish(a["date"]) || nullish(a["unit"]) || tzNull || (args["binSize"] != nil && nullish(a["binSize"])) {
		return valNull, nil
	}
	ms, ok := coerceToDate(a["date"])
	if !ok {
		return missing, mongoerr.New(mongoerr.Location5439012, "$dateTrunc requires 'date' to be a date, but got %s", bsonx.TypeName(a["date"].Type))
	}
	unit, err := unitArg("$dateTrunc", a["unit"])
	if err != nil {
		return missing, err
	}
	bin := int64(1)
	if args["binSize"] != nil {
		if bin, ok = integral(a["binSize"]); !ok || bin <= 0 {
			return missing, mongoerr.New(mongoerr.Location5439017, "$dateTrunc requires 'binSize' to be a positive 64-bit integer, but got value '%s' of type %s",
				a["binSize"].String(), bsonx.TypeName(a["binSize"].Type))
		}
	}
	sow, err := weekStart(a["startOfWeek"])
	if err != nil {
		return missing, err
	}
	t := localTime(ms, loc)
	ref := time.Date(2000, 1, 1, 0, 0, 0, 0, loc)
	if unit == "week" {
		ref = ref.AddDate(0, 0, (int(sow)-int(ref.Weekday())+7)%7)
	}
	n := floorDiv(unitsBetween(ref, t, unit, sow), bin) * bin
	r := addUnits(ref, unit, n)
	if r.After(t) {
		r = addUnits(ref, unit, n-bin)
	}
	return v.dateVal(r.UnixMilli()), nil
}
