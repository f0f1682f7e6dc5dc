package expr

import (
	"math"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cleavedb/cleave/bsonx/decimal128"
)

// operators maps each operator name to its parser. It is filled by init because the
// parsers call back into parse, which reads the table (an initialization cycle for a
// package-level literal).
var operators map[string]parseFn

func init() {
	operators = map[string]parseFn{
		// Arithmetic (arith.go, mathfn.go).
		"$add":      variadic(addOp),
		"$subtract": fixed(2, subtractOp),
		"$multiply": variadic(multiplyOp),
		"$divide":   fixed(2, divideOp),
		"$mod":      fixed(2, modOp),
		"$abs":      fixed(1, absOp),
		"$ceil":     fixed(1, ceilFloor("$ceil", true)),
		"$floor":    fixed(1, ceilFloor("$floor", false)),
		"$round":    ranged(1, 2, roundTruncOp("$round", decimal128.HalfEven)),
		"$trunc":    ranged(1, 2, roundTruncOp("$trunc", decimal128.Trunc)),
		"$sqrt":     fixed(1, unaryFloat("$sqrt", math.Sqrt, sqrtCheck)),
		"$exp":      fixed(1, unaryFloat("$exp", math.Exp, nil)),
		"$ln":       fixed(1, unaryFloat("$ln", math.Log, positive("$ln", 28766))),
		"$log10":    fixed(1, unaryFloat("$log10", math.Log10, positive("$log10", 28761))),
		"$log":      fixed(2, logOp),
		"$pow":      fixed(2, powOp),

		// Comparison, boolean, conditional, variables (cond.go).
		"$eq":      fixed(2, compareOp(func(c int) bool { return c == 0 })),
		"$ne":      fixed(2, compareOp(func(c int) bool { return c != 0 })),
		"$gt":      fixed(2, compareOp(func(c int) bool { return c > 0 })),
		"$gte":     fixed(2, compareOp(func(c int) bool { return c >= 0 })),
		"$lt":      fixed(2, compareOp(func(c int) bool { return c < 0 })),
		"$lte":     fixed(2, compareOp(func(c int) bool { return c <= 0 })),
		"$cmp":     fixed(2, cmpOp),
		"$and":     parseLogic(true),
		"$or":      parseLogic(false),
		"$not":     fixed(1, notOp),
		"$cond":    parseCond,
		"$ifNull":  parseIfNull,
		"$switch":  parseSwitch,
		"$literal": parseLiteral,
		"$let":     parseLet,
		"$rand":    parseRand,
		"$meta":    parseMeta,

		// Strings (strings.go, regex.go).
		"$concat":       variadic(concatOp),
		"$substr":       fixed(3, substrBytesOp("$substrBytes")),
		"$substrBytes":  fixed(3, substrBytesOp("$substrBytes")),
		"$substrCP":     fixed(3, substrCPOp),
		"$toLower":      fixed(1, caseOp(false)),
		"$toUpper":      fixed(1, caseOp(true)),
		"$strcasecmp":   fixed(2, strcasecmpOp),
		"$strLenBytes":  fixed(1, strLenOp("$strLenBytes", 34473, false)),
		"$strLenCP":     fixed(1, strLenOp("$strLenCP", 34471, true)),
		"$split":        fixed(2, splitOp),
		"$indexOfBytes": ranged(2, 4, indexOfStrOp("$indexOfBytes", false)),
		"$indexOfCP":    ranged(2, 4, indexOfStrOp("$indexOfCP", true)),
		"$trim":         parseTrim(true, true),
		"$ltrim":        parseTrim(true, false),
		"$rtrim":        parseTrim(false, true),
		"$replaceOne":   parseReplace(false),
		"$replaceAll":   parseReplace(true),
		"$regexMatch":   parseRegex(regexMatch),
		"$regexFind":    parseRegex(regexFind),
		"$regexFindAll": parseRegex(regexFindAll),

		// Arrays and sets (arrays.go, hof.go, sets.go).
		"$size":            fixed(1, sizeOp),
		"$isArray":         fixed(1, isArrayOp),
		"$arrayElemAt":     fixed(2, arrayElemAtOp),
		"$first":           fixed(1, firstLastOp("$first", false)),
		"$last":            fixed(1, firstLastOp("$last", true)),
		"$in":              fixed(2, inOp),
		"$concatArrays":    variadic(concatArraysOp),
		"$reverseArray":    fixed(1, reverseArrayOp),
		"$slice":           ranged(2, 3, sliceOp),
		"$indexOfArray":    ranged(2, 4, indexOfArrayOp),
		"$range":           ranged(2, 3, rangeOp),
		"$map":             parseMap,
		"$filter":          parseFilter,
		"$reduce":          parseReduce,
		"$sortArray":       parseSortArray,
		"$zip":             parseZip,
		"$setUnion":        variadic(setUnionOp),
		"$setIntersection": variadic(setIntersectionOp),
		"$setDifference":   fixed(2, setDifferenceOp),
		"$setEquals":       parseSetEquals,
		"$setIsSubset":     fixed(2, setIsSubsetOp),
		"$anyElementTrue":  fixed(1, elementsTrueOp("$anyElementTrue", 17041, true)),
		"$allElementsTrue": fixed(1, elementsTrueOp("$allElementsTrue", 17040, false)),
		"$sum":             variadic(sumOp),
		"$avg":             variadic(avgOp),
		"$percentile":      parseQuantileExpr,
		"$median":          parseQuantileExpr,
		"$max":             variadic(minMaxOp(1)),
		"$min":             variadic(minMaxOp(-1)),

		// Objects (objects.go).
		"$mergeObjects":  variadic(mergeObjectsOp),
		"$objectToArray": fixed(1, objectToArrayOp),
		"$arrayToObject": fixed(1, arrayToObjectOp),
		"$getField":      parseField("get"),
		"$setField":      parseField("set"),
		"$unsetField":    parseField("unset"),

		// Dates (dates.go, datefmt.go, datecalc.go).
		"$year":         parseDatePart(partYear),
		"$month":        parseDatePart(partMonth),
		"$dayOfMonth":   parseDatePart(partDayOfMonth),
		"$hour":         parseDatePart(partHour),
		"$minute":       parseDatePart(partMinute),
		"$second":       parseDatePart(partSecond),
		"$millisecond":  parseDatePart(partMillisecond),
		"$dayOfWeek":    parseDatePart(partDayOfWeek),
		"$dayOfYear":    parseDatePart(partDayOfYear),
		"$week":         parseDatePart(partWeek),
		"$isoWeek":      parseDatePart(partISOWeek),
		"$isoWeekYear":  parseDatePart(partISOWeekYear),
		"$isoDayOfWeek": parseDatePart(partISODay),
		"$dateToString": parseNamed([]string{"date", "format", "timezone", "onNull"}, []string{"date"}, 18629, 18534, 18628, dateToString),
		"$dateFromString": parseNamed([]string{"dateString", "format", "timezone", "onError", "onNull"}, []string{"dateString"},
			40540, 40541, 40542, dateFromString),
		"$dateToParts": parseNamed([]string{"date", "timezone", "iso8601"}, []string{"date"}, 40524, 40520, 40522, dateToParts),
		"$dateFromParts": parseNamed([]string{"year", "month", "day", "hour", "minute", "second", "millisecond",
			"isoWeekYear", "isoWeek", "isoDayOfWeek", "timezone"}, nil, 40519, 40518, 40516, dateFromParts),
		"$dateAdd": parseNamed([]string{"startDate", "unit", "amount", "timezone"}, []string{"startDate", "unit", "amount"},
			5166400, 5166401, 5166402, dateAddOp("$dateAdd", 1)),
		"$dateSubtract": parseNamed([]string{"startDate", "unit", "amount", "timezone"}, []string{"startDate", "unit", "amount"},
			5166400, 5166401, 5166402, dateAddOp("$dateSubtract", -1)),
		"$dateDiff": parseNamed([]string{"startDate", "endDate", "unit", "timezone", "startOfWeek"}, []string{"startDate", "endDate", "unit"},
			5166301, 5166302, 5166303, dateDiff),
		"$dateTrunc": parseNamed([]string{"date", "unit", "binSize", "timezone", "startOfWeek"}, []string{"date", "unit"},
			5439007, 5439008, 5439009, dateTrunc),

		// Types (convert.go).
		"$type":       fixed(1, typeOp),
		"$isNumber":   fixed(1, isNumberOp),
		"$convert":    parseConvert,
		"$toString":   parseTo(bsoncore.TypeString),
		"$toInt":      parseTo(bsoncore.TypeInt32),
		"$toLong":     parseTo(bsoncore.TypeInt64),
		"$toDouble":   parseTo(bsoncore.TypeDouble),
		"$toDecimal":  parseTo(bsoncore.TypeDecimal128),
		"$toBool":     parseTo(bsoncore.TypeBoolean),
		"$toObjectId": parseTo(bsoncore.TypeObjectID),
		"$toDate":     parseTo(bsoncore.TypeDateTime),
		"$function":   parseFunction, // server-side JavaScript (function.go)
	}
}
