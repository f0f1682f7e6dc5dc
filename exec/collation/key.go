package collation

import (
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"

	"github.com/cleavedb/cleave/wire/mongoerr"
)

// keyer computes comparison keys for one spec. x/text's Collator keeps iteration state,
// so each goroutine takes one from the pool.
type keyer struct {
	pool       *sync.Pool // of *worker
	swapCase   bool       // caseFirst "upper" at the tertiary level
	caseLevel  bool       // our own case level (strength 1 or 2)
	upperFirst bool
	identical  bool
}

// worker is one x/text collator with its key buffer.
type worker struct {
	c   *collate.Collator
	buf collate.Buffer
}

// newKeyer builds the keyer of s (a validated spec).
func newKeyer(s *Spec) (keyer, error) {
	tag, err := language.Parse(locales[s.Locale])
	if err != nil {
		return keyer{}, mongoerr.New(mongoerr.NotImplemented, "the collation locale %q is not supported by cleave", s.Locale)
	}
	set := func(key, value string) {
		if t, err := tag.SetTypeForKey(key, value); err == nil {
			tag = t
		}
	}
	level := min(s.Strength, 4)
	set("ks", "level"+strconv.Itoa(level))
	if s.Alternate == "shifted" {
		set("ka", "shifted")
	}
	if s.Backwards {
		set("kb", "true")
	}
	var opts []collate.Option
	if s.NumericOrdering {
		opts = append(opts, collate.Numeric)
	}
	k := keyer{
		swapCase:   s.CaseFirst == "upper" && s.Strength >= 3,
		caseLevel:  s.CaseLevel && s.Strength <= 2,
		upperFirst: s.CaseFirst == "upper",
		identical:  s.Strength == 5,
	}
	k.pool = &sync.Pool{New: func() any { return &worker{c: collate.New(tag, opts...)} }}
	return k, nil
}

// Key appends the comparison key of s to dst (bsonx.Collator).
func (c *Collation) Key(dst, s []byte) []byte {
	k := &c.key
	w := k.pool.Get().(*worker) // the pool only holds *worker
	in := s
	if k.swapCase {
		in = swapCase(s)
	}
	dst = append(dst, w.c.Key(&w.buf, in)...)
	w.buf.Reset()
	k.pool.Put(w)
	if k.caseLevel {
		dst = appendCaseLevel(append(dst, 0, 0), s, k.upperFirst)
	}
	if k.identical {
		dst = append(append(dst, 0, 0), norm.NFD.Bytes(s)...)
	}
	return dst
}

// swapCase returns s with each rune's case swapped (simple mappings), which turns x/text's
// lowercase-first tertiary order into uppercase-first.
func swapCase(s []byte) []byte {
	out := make([]byte, 0, len(s))
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case unicode.IsUpper(r):
			r = unicode.ToLower(r)
		case unicode.IsLower(r):
			r = unicode.ToUpper(r)
		}
		out = utf8.AppendRune(out, r)
		s = s[n:]
	}
	return out
}

// appendCaseLevel appends one byte per cased letter of s: 1 for lowercase and 2 for
// uppercase (the other way round with upperFirst), ICU's case level.
func appendCaseLevel(dst, s []byte, upperFirst bool) []byte {
	lower, upper := byte(1), byte(2)
	if upperFirst {
		lower, upper = upper, lower
	}
	for _, r := range string(norm.NFD.Bytes(s)) {
		switch {
		case unicode.IsUpper(r) || unicode.IsTitle(r):
			dst = append(dst, upper)
		case unicode.IsLower(r):
			dst = append(dst, lower)
		}
	}
	return dst
}
