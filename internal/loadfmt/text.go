package loadfmt

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
)

// The text forms of values, as package resultfmt writes them: the parsers
// here read each exactly, refusing what the type cannot hold (an
// overflow, a digit past a decimal's scale, a fraction of a second finer
// than the unit) instead of changing it.

// str views b as a string without copying, for parsers that keep nothing.
func str(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// quote is b quoted for a message, cut after 40 bytes.
func quote(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])) + "…"
	}
	return strconv.Quote(string(b))
}

func parseBool(s []byte) (bool, error) {
	switch len(s) {
	case 1:
		switch s[0] {
		case 't', 'T', '1':
			return true, nil
		case 'f', 'F', '0':
			return false, nil
		}
	case 4, 5:
		switch {
		case equalFold(s, "true"):
			return true, nil
		case equalFold(s, "false"):
			return false, nil
		}
	}
	return false, fmt.Errorf("%s is not a BOOLEAN (true, false, t, f, 1 or 0)", quote(s))
}

// equalFold reports whether s is lower, ignoring ASCII case.
func equalFold(s []byte, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := range s {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func parseInt(s []byte, bits int, name string) (int64, error) {
	v, err := strconv.ParseInt(str(s), 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%s is out of range for %s", quote(s), name)
		}
		return 0, fmt.Errorf("%s is not an integer (%s)", quote(s), name)
	}
	return v, nil
}

func parseFloat(s []byte, bits int, name string) (float64, error) {
	v, err := strconv.ParseFloat(str(s), bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%s is out of range for %s", quote(s), name)
		}
		return 0, fmt.Errorf("%s is not a number (%s)", quote(s), name)
	}
	return v, nil
}

// parseDecimal reads a decimal number (with an optional exponent) as a
// DECIMAL(prec, scale) exactly: digits past the scale must be zeros, and
// the value must have at most prec digits.
func parseDecimal(s []byte, prec, scale int32) (decimal128.Num, error) {
	name := fmt.Sprintf("DECIMAL(%d, %d)", prec, scale)
	bad := func() (decimal128.Num, error) {
		return decimal128.Num{}, fmt.Errorf("%s is not a number (%s)", quote(s), name)
	}
	i := 0
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var digits []byte // the integer and fraction digits, leading zeros dropped
	var buf [48]byte
	digits = buf[:0]
	seen, frac := false, 0
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		seen = true
		if len(digits) > 0 || s[i] != '0' {
			digits = append(digits, s[i])
		}
	}
	if i < len(s) && s[i] == '.' {
		i++
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			seen = true
			frac++
			if len(digits) > 0 || s[i] != '0' {
				digits = append(digits, s[i])
			}
		}
	}
	if !seen {
		return bad()
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		e, err := strconv.Atoi(str(s[i+1:]))
		if err != nil || e > 1000 || e < -1000 {
			return bad()
		}
		exp, i = e, len(s)
	}
	if i != len(s) {
		return bad()
	}
	// value = digits × 10^(exp-frac); stored = value × 10^scale.
	shift := exp - frac + int(scale)
	if shift < 0 {
		cut := -shift
		if cut > len(digits) {
			cut = len(digits)
		}
		for _, d := range digits[len(digits)-cut:] {
			if d != '0' {
				return decimal128.Num{}, fmt.Errorf("%s has more digits after the point than %s holds (%d)", quote(s), name, scale)
			}
		}
		digits = digits[:len(digits)-cut]
	} else if len(digits) > 0 {
		for range shift {
			digits = append(digits, '0')
		}
	}
	if len(digits) > int(prec) {
		return decimal128.Num{}, fmt.Errorf("%s has more digits than %s holds (%d, %d of them before the point)", quote(s), name, prec, prec-scale)
	}
	if len(digits) == 0 {
		return decimal128.Num{}, nil
	}
	if len(digits) <= 18 {
		v, _ := strconv.ParseInt(str(digits), 10, 64)
		if neg {
			v = -v
		}
		return decimal128.FromI64(v), nil
	}
	var b big.Int
	b.SetString(string(digits), 10)
	if neg {
		b.Neg(&b)
	}
	return decimal128.FromBigInt(&b), nil
}

func parseBytes(s []byte) ([]byte, error) {
	if len(s) >= 2 && s[0] == '\\' && (s[1] == 'x' || s[1] == 'X') {
		out := make([]byte, hex.DecodedLen(len(s)-2))
		if _, err := hex.Decode(out, s[2:]); err != nil {
			return nil, fmt.Errorf("%s is not hex after \\x: %v", quote(s), err)
		}
		return out, nil
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(s)))
	n, err := base64.StdEncoding.Decode(out, s)
	if err != nil {
		return nil, fmt.Errorf("%s is not base64 (bytes are written in base64, or as \\x and hex)", quote(s))
	}
	return out[:n], nil
}

func checkUTF8(s []byte) error {
	if !utf8.Valid(s) {
		return fmt.Errorf("%s is not valid UTF-8 (bytes belong in a BYTES column)", quote(s))
	}
	return nil
}

// dateTime is a parsed date, time or timestamp.
type dateTime struct {
	days    int64 // since 1970-01-01
	nanos   int64 // of the day
	digits  int   // of the fraction of a second
	zone    int64 // offset east of UTC, in seconds
	hasZone bool
	hasTime bool
}

// seconds is the instant in seconds since the epoch (in UTC).
func (d dateTime) seconds() int64 { return d.days*86400 + d.nanos/1e9 - d.zone }

// parseDate reads YYYY-MM-DD at the start of s; n is its length.
func parseDate(s []byte) (days int64, n int, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) || y == 0 {
		return 0, 0, false
	}
	return daysFromCivil(y, m, d), 10, true
}

// parseClock reads HH:MM[:SS[.fffffffff]] at the start of s.
func parseClock(s []byte) (nanos int64, fracDigits, n int, ok bool) {
	if len(s) < 5 || s[2] != ':' {
		return 0, 0, 0, false
	}
	h, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, 0, 0, false
	}
	n = 5
	var sec int64
	if len(s) >= 8 && s[5] == ':' {
		v, ok := digits(s[6:8])
		if !ok || v > 59 {
			return 0, 0, 0, false
		}
		sec, n = v, 8
		if n < len(s) && s[n] == '.' {
			n++
			start := n
			var f int64
			for n < len(s) && '0' <= s[n] && s[n] <= '9' {
				if n-start >= 9 {
					return 0, 0, 0, false // finer than nanoseconds
				}
				f = f*10 + int64(s[n]-'0')
				n++
			}
			fracDigits = n - start
			if fracDigits == 0 {
				return 0, 0, 0, false
			}
			for range 9 - fracDigits {
				f *= 10
			}
			nanos = f
		}
	}
	return nanos + (h*3600+m*60+sec)*1e9, fracDigits, n, true
}

// parseZone reads Z or ±HH[:MM] (or ±HHMM) that ends s.
func parseZone(s []byte) (offset int64, ok bool) {
	if len(s) == 1 && (s[0] == 'Z' || s[0] == 'z') {
		return 0, true
	}
	if len(s) < 3 || (s[0] != '+' && s[0] != '-') {
		return 0, false
	}
	h, ok := digits(s[1:3])
	if !ok || h > 18 {
		return 0, false
	}
	var m int64
	switch rest := s[3:]; {
	case len(rest) == 0:
	case len(rest) == 3 && rest[0] == ':':
		m, ok = digits(rest[1:])
	case len(rest) == 2:
		m, ok = digits(rest)
	default:
		ok = false
	}
	if !ok || m > 59 {
		return 0, false
	}
	offset = h*3600 + m*60
	if s[0] == '-' {
		offset = -offset
	}
	return offset, true
}

// parseTimestamp reads YYYY-MM-DD[( |T)HH:MM[:SS[.f]]][zone], as a
// timestamp is written (a zone: Z, +02:00, -0530).
func parseTimestamp(s []byte) (dateTime, bool) {
	var d dateTime
	days, n, ok := parseDate(s)
	if !ok {
		return d, false
	}
	d.days = days
	rest := s[n:]
	if len(rest) > 0 && (rest[0] == ' ' || rest[0] == 'T' || rest[0] == 't') {
		nanos, digits, m, ok := parseClock(rest[1:])
		if !ok {
			return d, false
		}
		d.nanos, d.digits, d.hasTime = nanos, digits, true
		rest = rest[1+m:]
		if len(rest) > 0 && rest[0] == ' ' { // 2024-01-01 10:00:00 +02:00
			rest = rest[1:]
		}
	}
	if len(rest) > 0 {
		if !d.hasTime {
			return d, false
		}
		z, ok := parseZone(rest)
		if !ok {
			return d, false
		}
		d.zone, d.hasZone = z, true
	}
	return d, true
}

// timestampValue is d in unit, exactly.
func timestampValue(d dateTime, unit arrow.TimeUnit) (int64, error) {
	sec := d.seconds()
	frac := d.nanos % 1e9
	per := int64(unit.Multiplier()) // nanoseconds per unit
	if frac%per != 0 {
		return 0, errFiner
	}
	perSec := int64(1e9) / per
	const limit = 1<<63 - 1
	if sec > limit/perSec || sec < -limit/perSec {
		return 0, errRange
	}
	return sec*perSec + frac/per, nil
}

var (
	errFiner = errors.New("finer")
	errRange = errors.New("range")
)

// digits reads a run of ASCII digits.
func digits(s []byte) (int64, bool) {
	var v int64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, len(s) > 0
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// daysFromCivil is the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar (H. Hinnant's algorithm).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
