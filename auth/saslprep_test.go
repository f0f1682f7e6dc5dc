package auth

import (
	"errors"
	"testing"
)

// saslprepCases are passwords and what SASLprep makes of them: the prepared string, or the
// ICU error name MongoDB reports.
var saslprepCases = []struct {
	name, in, want, reason string
}{
	{"ASCII", "pencil", "pencil", ""},
	{"NonASCIISpaceMapped", "a\u00A0b", "a b", ""},
	{"SoftHyphenDropped", "I\u00ADX", "IX", ""},
	{"NFKC", "\u2168", "IX", ""},
	{"AllRTL", "\u05D0\u05D1", "\u05D0\u05D1", ""},
	{"Control", "a\u0007", "", "U_STRINGPREP_PROHIBITED_ERROR"},
	{"PrivateUse", "\uE000", "", "U_STRINGPREP_PROHIBITED_ERROR"},
	{"Unassigned", "\u0221", "", "U_STRINGPREP_UNASSIGNED_ERROR"},
	{"UnassignedAfterProhibited", "\u0007\u0221", "", "U_STRINGPREP_UNASSIGNED_ERROR"},
	{"MixedDirection", "\u05D0a", "", "U_STRINGPREP_CHECK_BIDI_ERROR"},
	{"RTLNotLast", "\u05D01", "", "U_STRINGPREP_CHECK_BIDI_ERROR"},
}

// TestSASLprep checks the prepared strings and ICU's names for each refusal.
func TestSASLprep(t *testing.T) {
	for _, tc := range saslprepCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SASLprep(tc.in)
			var pe *PrepError
			switch {
			case tc.reason == "" && (err != nil || got != tc.want):
				t.Errorf("SASLprep(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			case tc.reason != "" && (!errors.As(err, &pe) || pe.Reason != tc.reason):
				t.Errorf("SASLprep(%q) error = %v; want %s", tc.in, err, tc.reason)
			}
		})
	}
}
