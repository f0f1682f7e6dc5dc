package impex

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/bson"
)

// maxFastDepth bounds the nesting the fast scanner follows; deeper input goes to the driver.
const maxFastDepth = 100

// parseDoc returns the BSON of one Extended JSON document, appended to dst: the fast
// scanner's when the input has the common shape it knows, else the driver's
// (bson.UnmarshalExtJSON, then bson.Marshal), byte for byte the same either way.
func parseDoc(dst, src []byte) ([]byte, error) {
	if out, ok := appendFastDoc(dst, src); ok {
		return out, nil
	}
	return appendDriverDoc(dst, src)
}

// appendDriverDoc is the driver's reading of src: the reference parseDoc matches.
func appendDriverDoc(dst, src []byte) ([]byte, error) {
	var d bson.D
	if err := bson.UnmarshalExtJSON(src, false, &d); err != nil {
		return dst, err
	}
	raw, err := bson.Marshal(d)
	if err != nil {
		return dst, err
	}
	return append(dst, raw...), nil
}

// appendFastDoc appends the BSON of src to dst when src is a document of the shape the
// scanner knows, and reports whether it was; when it was not, the caller asks the driver.
// The shape: JSON objects, arrays, strings (escapes but \u), numbers, true, false and null,
// plus the wrappers {"$oid": hex}, {"$numberLong": "n"} and {"$date": "RFC 3339"} or
// {"$date": {"$numberLong": "n"}}. Any other key starting with '$', any other escape or
// byte below 0x20 in a string, invalid UTF-8, a number strconv refuses, nesting past
// maxFastDepth and anything after the document go to the driver. Numbers are typed as the
// driver types them in relaxed mode: an integer is an int32 when it fits, an int64 when it
// fits, else a double; anything with a fraction or exponent is a double.
func appendFastDoc(dst, src []byte) ([]byte, bool) {
	s := fastScanner{src: src}
	s.ws()
	if !s.eat('{') {
		return dst, false
	}
	out, ok := s.object(dst, 0)
	if !ok {
		return dst, false
	}
	s.ws()
	if s.pos != len(s.src) {
		return dst, false
	}
	return out, true
}

// fastScanner reads src from pos.
type fastScanner struct {
	src []byte
	pos int
}

// ws skips JSON whitespace, as the driver's scanner defines it.
func (s *fastScanner) ws() {
	for s.pos < len(s.src) {
		switch s.src[s.pos] {
		case ' ', '\t', '\r', '\n':
			s.pos++
		default:
			return
		}
	}
}

// eat consumes c if it is next.
func (s *fastScanner) eat(c byte) bool {
	if s.pos < len(s.src) && s.src[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

// peek is the next byte, or 0 at the end.
func (s *fastScanner) peek() byte {
	if s.pos < len(s.src) {
		return s.src[s.pos]
	}
	return 0
}

// object appends the document whose '{' was read, up to its '}'.
func (s *fastScanner) object(dst []byte, depth int) ([]byte, bool) {
	if depth > maxFastDepth {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	s.ws()
	if !s.eat('}') {
		for {
			s.ws()
			key, ok := s.key()
			if !ok {
				return dst, false
			}
			s.ws()
			if !s.eat(':') {
				return dst, false
			}
			if dst, ok = s.element(dst, key, depth); !ok {
				return dst, false
			}
			s.ws()
			if s.eat('}') {
				break
			}
			if !s.eat(',') {
				return dst, false
			}
		}
	}
	return closeDoc(dst, start), true
}

// closeDoc ends the document begun at start: its terminator and length.
func closeDoc(dst []byte, start int) []byte {
	dst = append(dst, 0)
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// key reads a field name: a string without escapes, NUL or '$' in front.
func (s *fastScanner) key() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.pos
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case c == '"':
			k := s.src[start:s.pos]
			s.pos++
			if (len(k) > 0 && k[0] == '$') || !utf8.Valid(k) {
				return nil, false
			}
			return k, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.pos++
	}
	return nil, false
}

// array appends the array whose '[' was read, up to its ']'.
func (s *fastScanner) array(dst []byte, depth int) ([]byte, bool) {
	if depth > maxFastDepth {
		return dst, false
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	s.ws()
	if !s.eat(']') {
		var idx [20]byte
		for i := 0; ; i++ {
			var ok bool
			if dst, ok = s.element(dst, strconv.AppendInt(idx[:0], int64(i), 10), depth); !ok {
				return dst, false
			}
			s.ws()
			if s.eat(']') {
				break
			}
			if !s.eat(',') {
				return dst, false
			}
		}
	}
	return closeDoc(dst, start), true
}

// element appends the element key: <the value that comes next>.
func (s *fastScanner) element(dst, key []byte, depth int) ([]byte, bool) {
	s.ws()
	typePos := len(dst)
	dst = append(dst, 0)
	dst = append(dst, key...)
	dst = append(dst, 0)
	var t bson.Type
	var ok bool
	switch c := s.peek(); {
	case c == '"':
		s.pos++
		t = bson.TypeString
		dst, ok = s.str(dst)
	case c == '{':
		s.pos++
		t, dst, ok = s.nested(dst, depth+1)
	case c == '[':
		s.pos++
		t = bson.TypeArray
		dst, ok = s.array(dst, depth+1)
	case c == 't' || c == 'f' || c == 'n':
		t, dst, ok = s.literal(dst)
	case c == '-' || c >= '0' && c <= '9':
		t, dst, ok = s.number(dst)
	}
	if !ok {
		return dst, false
	}
	dst[typePos] = byte(t)
	return dst, true
}

// nested appends the value of an object whose '{' was read: a wrapper or a document.
func (s *fastScanner) nested(dst []byte, depth int) (bson.Type, []byte, bool) {
	save := s.pos
	s.ws()
	if !s.eat('"') || !s.eat('$') {
		s.pos = save
		dst, ok := s.object(dst, depth)
		return bson.TypeEmbeddedDocument, dst, ok
	}
	name, ok := s.plain()
	if !ok {
		return 0, dst, false
	}
	s.ws()
	if !s.eat(':') {
		return 0, dst, false
	}
	s.ws()
	var t bson.Type
	switch string(name) {
	case "oid":
		t, dst, ok = s.oid(dst)
	case "numberLong":
		t = bson.TypeInt64
		dst, ok = s.numberLong(dst)
	case "date":
		t, dst, ok = s.date(dst)
	default:
		return 0, dst, false
	}
	s.ws()
	return t, dst, ok && s.eat('}')
}

// plain reads the rest of a string that holds no escape and no byte below 0x20.
func (s *fastScanner) plain() ([]byte, bool) {
	start := s.pos
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		if c == '"' {
			s.pos++
			return s.src[start : s.pos-1], true
		}
		if c == '\\' || c < 0x20 {
			return nil, false
		}
		s.pos++
	}
	return nil, false
}

// oid appends {"$oid": hex}'s value.
func (s *fastScanner) oid(dst []byte) (bson.Type, []byte, bool) {
	if !s.eat('"') {
		return 0, dst, false
	}
	hex, ok := s.plain()
	if !ok {
		return 0, dst, false
	}
	id, err := bson.ObjectIDFromHex(string(hex))
	if err != nil {
		return 0, dst, false
	}
	return bson.TypeObjectID, append(dst, id[:]...), true
}

// numberLong appends {"$numberLong": "n"}'s value.
func (s *fastScanner) numberLong(dst []byte) ([]byte, bool) {
	if !s.eat('"') {
		return dst, false
	}
	digits, ok := s.plain()
	if !ok {
		return dst, false
	}
	n, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return dst, false
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(n)), true
}

// timeFormats are the layouts the driver tries, in its order, for a $date string.
var timeFormats = []string{"2006-01-02T15:04:05.999Z07:00", "2006-01-02T15:04:05.999Z0700"}

// date appends {"$date": "RFC 3339"} or {"$date": {"$numberLong": "n"}}'s value.
func (s *fastScanner) date(dst []byte) (bson.Type, []byte, bool) {
	if s.eat('{') {
		s.ws()
		if !s.eat('"') {
			return 0, dst, false
		}
		name, ok := s.plain()
		if !ok || string(name) != "$numberLong" {
			return 0, dst, false
		}
		s.ws()
		if !s.eat(':') {
			return 0, dst, false
		}
		s.ws()
		dst, ok = s.numberLong(dst)
		s.ws()
		return bson.TypeDateTime, dst, ok && s.eat('}')
	}
	if !s.eat('"') {
		return 0, dst, false
	}
	text, ok := s.plain()
	if !ok {
		return 0, dst, false
	}
	for _, layout := range timeFormats {
		if t, err := time.Parse(layout, string(text)); err == nil {
			return bson.TypeDateTime, binary.LittleEndian.AppendUint64(dst, uint64(bson.NewDateTimeFromTime(t))), true
		}
	}
	return 0, dst, false
}

// str appends the string whose '"' was read, with its length and terminator.
func (s *fastScanner) str(dst []byte) ([]byte, bool) {
	lenPos := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	start := s.pos
	for {
		if s.pos >= len(s.src) {
			return dst, false
		}
		c := s.src[s.pos]
		switch {
		case c == '"':
			dst = append(dst, s.src[start:s.pos]...)
			s.pos++
			if !utf8.Valid(dst[lenPos+4:]) {
				return dst, false
			}
			dst = append(dst, 0)
			binary.LittleEndian.PutUint32(dst[lenPos:], uint32(len(dst)-lenPos-4))
			return dst, true
		case c < 0x20:
			return dst, false
		case c == '\\':
			dst = append(dst, s.src[start:s.pos]...)
			if s.pos+1 >= len(s.src) {
				return dst, false
			}
			e, ok := unescape(s.src[s.pos+1])
			if !ok {
				return dst, false
			}
			dst = append(dst, e)
			s.pos += 2
			start = s.pos
		default:
			s.pos++
		}
	}
}

// unescape is the byte of a one-letter JSON escape; \u and unknown escapes are not.
func unescape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// terminates reports whether the byte at i may follow a value (or i is the end).
func (s *fastScanner) terminates(i int) bool {
	if i >= len(s.src) {
		return true
	}
	switch s.src[i] {
	case ',', '}', ']', ' ', '\t', '\r', '\n':
		return true
	}
	return false
}

// literal appends true, false or null.
func (s *fastScanner) literal(dst []byte) (bson.Type, []byte, bool) {
	rest := s.src[s.pos:]
	var t bson.Type
	var n int
	switch {
	case len(rest) >= 4 && string(rest[:4]) == "true":
		t, n, dst = bson.TypeBoolean, 4, append(dst, 1)
	case len(rest) >= 5 && string(rest[:5]) == "false":
		t, n, dst = bson.TypeBoolean, 5, append(dst, 0)
	case len(rest) >= 4 && string(rest[:4]) == "null":
		t, n = bson.TypeNull, 4
	default:
		return 0, dst, false
	}
	if !s.terminates(s.pos + n) {
		return 0, dst, false
	}
	s.pos += n
	return t, dst, true
}

// number appends a JSON number (RFC 8259's grammar) typed as the driver types it.
func (s *fastScanner) number(dst []byte) (bson.Type, []byte, bool) {
	start := s.pos
	i := s.pos
	if i < len(s.src) && s.src[i] == '-' {
		i++
	}
	intStart := i
	for i < len(s.src) && isDigit(s.src[i]) {
		i++
	}
	if i == intStart || s.src[intStart] == '0' && i-intStart > 1 {
		return 0, dst, false
	}
	isInt := true
	if i < len(s.src) && s.src[i] == '.' {
		isInt = false
		i++
		fracStart := i
		for i < len(s.src) && isDigit(s.src[i]) {
			i++
		}
		if i == fracStart {
			return 0, dst, false
		}
	}
	if i < len(s.src) && (s.src[i] == 'e' || s.src[i] == 'E') {
		isInt = false
		i++
		if i < len(s.src) && (s.src[i] == '+' || s.src[i] == '-') {
			i++
		}
		expStart := i
		for i < len(s.src) && isDigit(s.src[i]) {
			i++
		}
		if i == expStart {
			return 0, dst, false
		}
	}
	if !s.terminates(i) {
		return 0, dst, false
	}
	text := string(s.src[start:i])
	s.pos = i
	if isInt {
		if v, err := strconv.ParseInt(text, 10, 64); err == nil {
			if v < math.MinInt32 || v > math.MaxInt32 {
				return bson.TypeInt64, binary.LittleEndian.AppendUint64(dst, uint64(v)), true
			}
			return bson.TypeInt32, binary.LittleEndian.AppendUint32(dst, uint32(int32(v))), true
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return 0, dst, false
	}
	return bson.TypeDouble, binary.LittleEndian.AppendUint64(dst, math.Float64bits(f)), true
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
