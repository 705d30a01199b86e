package expr_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/flightd/flightd/lake/expr"
)

// FuzzBind: Bind of a string constant (client input: a literal of a
// statement) never panics and converts exactly what a reference of
// DuckDB's casts that Bind takes on accepts: for integer columns a
// base-10 integer with an optional sign between ASCII white space, in the
// column's range; for DATE columns a YYYY-MM-DD calendar date, as days
// counted without package time; for string columns the string itself.
func FuzzBind(f *testing.F) {
	for _, s := range []string{"5", " -5 ", "+0", "-0", "127", "128", "-129", "\t\n\v\f\r1\r", "\u00a01", "1 2", "+-1", "0x1",
		"9223372036854775807", "-9223372036854775808", "9223372036854775808", "00000000000000000000000042",
		"2024-02-29", "2023-02-29", "0000-01-01", "9999-12-31", "1970-01-01", "1969-12-31", "2022-1-5", "2022-01-05 ", "+2022-01-05", ""} {
		for k := expr.KindInt8; k <= expr.KindString; k++ {
			f.Add(uint8(k), s)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, s string) {
		k := expr.Kind(kind % uint8(expr.KindString+1))
		b, ok := expr.Bind(k, expr.Predicate{Op: expr.OpEq, Values: []any{s}})
		var want any
		switch k {
		case expr.KindInt8, expr.KindInt16, expr.KindInt32, expr.KindInt64:
			if n, ok := refInt(s, map[expr.Kind]uint{expr.KindInt8: 8, expr.KindInt16: 16, expr.KindInt32: 32, expr.KindInt64: 64}[k]); ok {
				want = n
			}
		case expr.KindDate:
			if d, ok := refDate(s); ok {
				want = d
			}
		case expr.KindString:
			want = s
		}
		if ok != (want != nil) {
			t.Fatalf("Bind(%d, %q): ok %v, the reference says %v", k, s, ok, want)
		}
		if ok && b.Values()[0] != want {
			t.Fatalf("Bind(%d, %q) = %v, the reference says %v", k, s, b.Values()[0], want)
		}
	})
}

// refInt reads s as an integer of the given bits.
func refInt(s string, bits uint) (int64, bool) {
	s = strings.Trim(s, " \t\n\v\f\r")
	digits := strings.TrimLeft(s, "+-")
	if len(s)-len(digits) > 1 || digits == "" {
		return 0, false
	}
	n := new(big.Int)
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n.Mul(n, big.NewInt(10))
		n.Add(n, big.NewInt(int64(c-'0')))
	}
	if s[0] == '-' {
		n.Neg(n)
	}
	lim := new(big.Int).Lsh(big.NewInt(1), bits-1)
	if n.Cmp(new(big.Int).Neg(lim)) < 0 || n.Cmp(lim) >= 0 {
		return 0, false
	}
	return n.Int64(), true
}

// refDate reads s as YYYY-MM-DD and counts its days since 1970-01-01 in
// the proleptic Gregorian calendar (days_from_civil).
func refDate(s string) (int64, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	num := func(p string) (int64, bool) {
		n := int64(0)
		for _, c := range []byte(p) {
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int64(c-'0')
		}
		return n, true
	}
	y, ok1 := num(s[:4])
	m, ok2 := num(s[5:7])
	d, ok3 := num(s[8:])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 {
		return 0, false
	}
	leap := y%4 == 0 && (y%100 != 0 || y%400 == 0)
	days := []int64{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}[m-1]
	if m == 2 && leap {
		days = 29
	}
	if d > days {
		return 0, false
	}
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468, true
}
