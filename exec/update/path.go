package update

import (
	"strings"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// compareFields orders the children of an update tree node as MongoDB 5.0+ applies them
// (pathsupport::cmpPathsAndArrayIndexes): names that both start with a digit and are not
// zero-padded order by length first, which is numeric order for numbers ("2" before "10");
// everything else orders bytewise. It returns -1, 0 or +1.
func compareFields(a, b string) int {
	if a == b {
		return 0
	}
	numeric := len(a) > 0 && len(b) > 0 && isDigit(a[0]) && isDigit(b[0]) &&
		(a[0] != '0' || len(a) == 1) && (b[0] != '0' || len(b) == 1)
	if numeric && len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	// Equal lengths of digits compare digit by digit, which is bytewise order; a non-digit
	// found on the way falls back to bytewise order as well.
	return strings.Compare(a, b)
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// allDigits reports whether s is a non-empty string of ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// arrayIndex parses a path component as MongoDB's str::parseUnsignedBase10Integer does when
// it steps into an array: digits only, fitting an unsigned 32-bit integer. It returns -1
// otherwise.
func arrayIndex(s string) int {
	if !allDigits(s) || len(s) > 10 {
		return -1
	}
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
	}
	if n > 1<<32-1 {
		return -1
	}
	return n
}

// paddingIndex parses a digits-only component as pathsupport::isNumeric does when it creates
// array elements; values beyond what padding allows saturate, so the caller reports
// CannotBackfillArray.
func paddingIndex(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
		if n > 1<<40 {
			return 1 << 40
		}
	}
	return n
}

// isPositional reports whether a path component is the positional operator "$".
func isPositional(part string) bool { return part == "$" }

// arrayFilterID returns the identifier of a "$[<id>]" component ("" for "$[]").
func arrayFilterID(part string) (string, bool) {
	if len(part) >= 3 && part[0] == '$' && part[1] == '[' && part[len(part)-1] == ']' {
		return part[2 : len(part)-1], true
	}
	return "", false
}

// isDynamic reports whether a component is resolved per document ("$", "$[]", "$[id]").
func isDynamic(part string) bool {
	_, ok := arrayFilterID(part)
	return ok || isPositional(part)
}

// splitPath splits a dotted update path into components and checks it as
// fieldchecker::isUpdatable does: no empty path, no empty component.
func splitPath(path string) ([]string, error) {
	if path == "" {
		return nil, errf(mongoerr.EmptyFieldName, "An empty update path is not valid.")
	}
	parts := strings.Split(path, ".")
	for _, p := range parts {
		if p == "" {
			return nil, errf(mongoerr.EmptyFieldName,
				"The update path '%s' contains an empty field name, which is not allowed.", path)
		}
	}
	return parts, nil
}

// isPrefixPath reports whether path a is a strict prefix of path b, component-wise.
func isPrefixPath(a, b []string) bool {
	if len(a) >= len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// samePath reports whether two component lists are equal.
func samePath(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
