package pcre

import "testing"

func TestTranslate(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		flags   Flags
		want    string
	}{
		{`abc$`, Flags{}, `abc(?:\n?\z)`},
		{`abc$`, Flags{M: true}, `(?m)abc$`},
		{`a b # c` + "\n" + `d`, Flags{X: true}, `abd`},
		{`a\ b[ ]`, Flags{X: true}, `a\ b[ ]`},
		{`\s\S`, Flags{}, `[\t\n\x0B\f\r ][^\t\n\x0B\f\r ]`},
		{`[\s]`, Flags{}, `[\t\n\x0B\f\r ]`},
		{`a(?#comment)b`, Flags{}, `ab`},
		{`(?'n'a)`, Flags{}, `(?P<n>a)`},
		{`(?x: a b )c d`, Flags{}, `(?:ab)c d`},
		{`(?m)^a$`, Flags{}, `(?m)^a$`},
		{`a{2}b{x`, Flags{}, `a{2}b\{x`},
		{`\Qa.b\E.`, Flags{}, `\Qa.b\E.`},
		{`a+?b*?`, Flags{}, `a+?b*?`},
		{`[]a]`, Flags{}, `[\]a]`},
		{`\cA\e`, Flags{}, `\x{01}\x1B`},
		{`a\sb$`, Flags{}, `a[\t\n\x0B\f\r ]b(?:\n?\z)`},
		{`a.`, Flags{I: true, M: true, S: true}, `(?ims)a.`},
	} {
		got, err := Translate(tc.pattern, tc.flags)
		if err != nil || got != tc.want {
			t.Errorf("Translate(%q, %+v) = %q, %v; want %q", tc.pattern, tc.flags, got, err, tc.want)
		}
	}
	for _, bad := range []string{`a(?=b)`, `a(?<!b)`, `(a)\1`, `\k<n>`, `a*+`, `a?+`, `a{2}+`, `(?>a)`, `(?|a)`, `(?R)`, `\G`, `\K`, `(?z)`, `[\V]`} {
		if got, err := Translate(bad, Flags{}); err == nil {
			t.Errorf("Translate(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		options string
		want    Flags
		bad     byte
		ok      bool
	}{
		{"", Flags{}, 0, true},
		{"imsxu", Flags{I: true, M: true, S: true, X: true}, 0, true},
		{"mu", Flags{M: true}, 0, true},
		{"iz", Flags{I: true}, 'z', false},
		{"g", Flags{}, 'g', false},
	} {
		fl, bad, ok := ParseFlags(tc.options)
		if ok != tc.ok || bad != tc.bad || (ok && fl != tc.want) {
			t.Errorf("ParseFlags(%q) = %+v, %q, %v; want %+v, %q, %v", tc.options, fl, bad, ok, tc.want, tc.bad, tc.ok)
		}
	}
}
