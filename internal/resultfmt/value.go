package resultfmt

import (
	"encoding/base64"
	"encoding/hex"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// binaryStyle says how a text format writes bytes.
type binaryStyle int

const (
	binaryBase64 binaryStyle = iota // data formats (CSV, TSV, JSON): exact and short
	binaryHex                       // display formats (table, Markdown): \x6869, as psql shows bytea
)

// Layouts of temporal values: SQL's spelling (a space between date and
// time), fractions of seconds without trailing zeros, a zone only where
// the type has one.
const (
	dateLayout   = "2006-01-02"
	timeLayout   = "15:04:05.999999999"
	tsLayout     = "2006-01-02 15:04:05.999999999"
	tsZoneLayout = "2006-01-02 15:04:05.999999999Z07:00"
)

// appendText appends the text of row i of arr, which is not null: what
// the CSV, TSV, table and Markdown formats print. Scalars are written as
// SQL writes them (decimals with every digit of their scale, timestamps
// as 2024-01-01 10:00:00.5); lists, structs, maps and intervals as the
// JSON appendJSON writes.
func appendText(dst []byte, arr arrow.Array, i int, bin binaryStyle) []byte {
	switch a := arr.(type) {
	case *array.String:
		return append(dst, a.Value(i)...)
	case *array.LargeString:
		return append(dst, a.Value(i)...)
	case *array.StringView:
		return append(dst, a.Value(i)...)
	case *array.Binary:
		return appendBytes(dst, a.Value(i), bin)
	case *array.LargeBinary:
		return appendBytes(dst, a.Value(i), bin)
	case *array.BinaryView:
		return appendBytes(dst, a.Value(i), bin)
	case *array.FixedSizeBinary:
		return appendBytes(dst, a.Value(i), bin)
	case *array.Dictionary:
		return appendText(dst, a.Dictionary(), a.GetValueIndex(i), bin)
	case array.ExtensionArray:
		return appendText(dst, a.Storage(), i, bin)
	case *array.Boolean, *array.Int8, *array.Int16, *array.Int32, *array.Int64,
		*array.Uint8, *array.Uint16, *array.Uint32, *array.Uint64,
		*array.Decimal32, *array.Decimal64, *array.Decimal128, *array.Decimal256:
		return appendJSON(dst, arr, i)
	case *array.Float16:
		return appendFloat(dst, float64(a.Value(i).Float32()), 32, false)
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32, false)
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64, false)
	case *array.Date32:
		return a.Value(i).ToTime().AppendFormat(dst, dateLayout)
	case *array.Date64:
		return a.Value(i).ToTime().AppendFormat(dst, dateLayout)
	case *array.Time32:
		return a.Value(i).ToTime(a.DataType().(*arrow.Time32Type).Unit).AppendFormat(dst, timeLayout)
	case *array.Time64:
		return a.Value(i).ToTime(a.DataType().(*arrow.Time64Type).Unit).AppendFormat(dst, timeLayout)
	case *array.Timestamp:
		return appendTimestamp(dst, a, i)
	case *array.Duration:
		unit := a.DataType().(*arrow.DurationType).Unit
		return append(dst, (time.Duration(a.Value(i)) * unit.Multiplier()).String()...)
	}
	// Nested values and intervals: their JSON.
	return appendJSON(dst, arr, i)
}

// appendJSON appends row i of arr as a JSON value: null; numbers for
// integers, finite floats and decimals (decimals exactly, with their
// scale: 12.50); "NaN", "Infinity" and "-Infinity" as strings; bytes in
// base64; dates, times and timestamps as the text appendText writes;
// lists as arrays; structs as objects in field order; maps as objects
// whose keys are their keys' text; intervals as objects of their parts.
func appendJSON(dst []byte, arr arrow.Array, i int) []byte {
	if arr.IsNull(i) {
		return append(dst, "null"...)
	}
	switch a := arr.(type) {
	case *array.Null:
		return append(dst, "null"...)
	case *array.Boolean:
		return strconv.AppendBool(dst, a.Value(i))
	case *array.Int8:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.AppendInt(dst, int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.AppendInt(dst, a.Value(i), 10)
	case *array.Uint8:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.AppendUint(dst, uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.AppendUint(dst, a.Value(i), 10)
	case *array.Float16:
		return appendFloat(dst, float64(a.Value(i).Float32()), 32, true)
	case *array.Float32:
		return appendFloat(dst, float64(a.Value(i)), 32, true)
	case *array.Float64:
		return appendFloat(dst, a.Value(i), 64, true)
	case *array.Decimal32:
		return append(dst, a.Value(i).ToString(a.DataType().(*arrow.Decimal32Type).Scale)...)
	case *array.Decimal64:
		return append(dst, a.Value(i).ToString(a.DataType().(*arrow.Decimal64Type).Scale)...)
	case *array.Decimal128:
		return append(dst, a.Value(i).ToString(a.DataType().(*arrow.Decimal128Type).Scale)...)
	case *array.Decimal256:
		return append(dst, a.Value(i).ToString(a.DataType().(*arrow.Decimal256Type).Scale)...)
	case *array.Dictionary:
		return appendJSON(dst, a.Dictionary(), a.GetValueIndex(i))
	case array.ExtensionArray:
		return appendJSON(dst, a.Storage(), i)
	case *array.Struct:
		dst = append(dst, '{')
		st := a.DataType().(*arrow.StructType)
		for f := 0; f < a.NumField(); f++ {
			if f > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, st.Field(f).Name)
			dst = append(dst, ':')
			dst = appendJSON(dst, a.Field(f), i)
		}
		return append(dst, '}')
	case *array.Map:
		// Before ListLike: a map is a list of key-value structs.
		start, end := a.ValueOffsets(i)
		keys, items := a.Keys(), a.Items()
		dst = append(dst, '{')
		var key []byte
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			key = appendText(key[:0], keys, int(j), binaryBase64)
			dst = appendJSONString(dst, string(key))
			dst = append(dst, ':')
			dst = appendJSON(dst, items, int(j))
		}
		return append(dst, '}')
	case array.ListLike:
		start, end := a.ValueOffsets(i)
		values := a.ListValues()
		dst = append(dst, '[')
		for j := start; j < end; j++ {
			if j > start {
				dst = append(dst, ',')
			}
			dst = appendJSON(dst, values, int(j))
		}
		return append(dst, ']')
	case *array.MonthInterval:
		return append(strconv.AppendInt(append(dst, `{"months":`...), int64(a.Value(i)), 10), '}')
	case *array.DayTimeInterval:
		v := a.Value(i)
		dst = strconv.AppendInt(append(dst, `{"days":`...), int64(v.Days), 10)
		return append(strconv.AppendInt(append(dst, `,"milliseconds":`...), int64(v.Milliseconds), 10), '}')
	case *array.MonthDayNanoInterval:
		v := a.Value(i)
		dst = strconv.AppendInt(append(dst, `{"months":`...), int64(v.Months), 10)
		dst = strconv.AppendInt(append(dst, `,"days":`...), int64(v.Days), 10)
		return append(strconv.AppendInt(append(dst, `,"nanoseconds":`...), v.Nanoseconds, 10), '}')
	case *array.String, *array.LargeString, *array.StringView,
		*array.Date32, *array.Date64, *array.Time32, *array.Time64, *array.Timestamp, *array.Duration:
		return appendJSONString(dst, string(appendText(nil, arr, i, binaryBase64)))
	case *array.Binary, *array.LargeBinary, *array.BinaryView, *array.FixedSizeBinary:
		return appendJSONString(dst, string(appendText(nil, arr, i, binaryBase64)))
	}
	// Anything else (unions, run-end encoded arrays): Arrow's own text.
	return appendJSONString(dst, arr.ValueStr(i))
}

// appendFloat writes v as Go's shortest round-trip text; in JSON, the
// values JSON has no number for become strings.
func appendFloat(dst []byte, v float64, bits int, json bool) []byte {
	var s string
	switch {
	case math.IsNaN(v):
		s = "NaN"
	case math.IsInf(v, 1):
		s = "Infinity"
	case math.IsInf(v, -1):
		s = "-Infinity"
	default:
		return strconv.AppendFloat(dst, v, 'g', -1, bits)
	}
	if json {
		return appendJSONString(dst, s)
	}
	return append(dst, s...)
}

func appendTimestamp(dst []byte, a *array.Timestamp, i int) []byte {
	tt := a.DataType().(*arrow.TimestampType)
	v := a.Value(i).ToTime(tt.Unit)
	if tt.TimeZone == "" {
		return v.AppendFormat(dst, tsLayout)
	}
	if loc, err := tt.GetZone(); err == nil {
		v = v.In(loc)
	}
	return v.AppendFormat(dst, tsZoneLayout)
}

func appendBytes(dst, b []byte, style binaryStyle) []byte {
	if style == binaryHex {
		return hex.AppendEncode(append(dst, `\x`...), b)
	}
	return base64.StdEncoding.AppendEncode(dst, b)
}

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced by U+FFFD.
func appendJSONString(dst []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += n
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
