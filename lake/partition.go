package lake

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/lake/manifest"
	"github.com/flightd/flightd/lake/paimontype"
)

const defaultPartitionName = "__DEFAULT_PARTITION__"

// partitionPath renders "k1=v1/k2=v2/" as Java's PartitionPathUtils with partition.legacy-name=true.
func partitionPath(keys []string, types []paimontype.DataType, vals []any, defaultName string) string {
	if len(keys) == 0 {
		return ""
	}
	var sb strings.Builder
	for i, k := range keys {
		v := legacyPartitionString(types[i], vals[i])
		if v == nil || strings.TrimSpace(*v) == "" {
			v = &defaultName
		}
		sb.WriteString(escapePathName(k))
		sb.WriteByte('=')
		sb.WriteString(escapePathName(*v))
		sb.WriteByte('/')
	}
	return sb.String()
}

// escapePathName is Java's PartitionPathUtils.escapePathName: the ASCII
// control characters (NUL included), DEL and "#%'*/:=?\{}[]^ become %XX
// (upper-case hex); everything else is kept.
func escapePathName(s string) string {
	var sb strings.Builder
	for _, r := range s {
		if r < 0x80 && needsEscape(byte(r)) {
			fmt.Fprintf(&sb, "%%%02X", r)
		} else {
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

func needsEscape(c byte) bool {
	if c <= 0x1F || c == 0x7F {
		return true
	}
	return strings.IndexByte("%\"#'*/:=?\\{}[]^", c) >= 0
}

// legacyPartitionString is Java toString() of the internal value.
func legacyPartitionString(t paimontype.DataType, v any) *string {
	if v == nil {
		return nil
	}
	var s string
	switch x := v.(type) {
	case bool:
		s = strconv.FormatBool(x)
	case int8:
		s = strconv.FormatInt(int64(x), 10)
	case int16:
		s = strconv.FormatInt(int64(x), 10)
	case int32:
		s = strconv.FormatInt(int64(x), 10)
	case int64:
		s = strconv.FormatInt(x, 10)
	case float32:
		s = javaFloatString(float64(x), 32)
	case float64:
		s = javaFloatString(x, 64)
	case string:
		s = x
	case []byte:
		s = string(x)
	case manifest.Decimal:
		s = plainDecimal(x.Unscaled, x.Scale)
	case manifest.Timestamp:
		s = localDateTimeString(x)
	default:
		s = fmt.Sprint(x)
	}
	return &s
}

func plainDecimal(u *big.Int, scale int) string {
	neg := u.Sign() < 0
	digits := new(big.Int).Abs(u).String()
	if scale > 0 {
		for len(digits) <= scale {
			digits = "0" + digits
		}
		digits = digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

// localDateTimeString is java.time.LocalDateTime.toString.
func localDateTimeString(ts manifest.Timestamp) string {
	t := time.UnixMilli(ts.Millis).UTC()
	nanos := int(t.Nanosecond()) + int(ts.NanoOfMilli)
	s := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d", t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute())
	if t.Second() == 0 && nanos == 0 {
		return s
	}
	s += fmt.Sprintf(":%02d", t.Second())
	switch {
	case nanos == 0:
	case nanos%1000000 == 0:
		s += fmt.Sprintf(".%03d", nanos/1000000)
	case nanos%1000 == 0:
		s += fmt.Sprintf(".%06d", nanos/1000)
	default:
		s += fmt.Sprintf(".%09d", nanos)
	}
	return s
}

// javaFloatString is Float/Double.toString: the shortest digits that identify the value, at least
// one after the point (the nearest one when the shortest has none), E notation outside [1e-3, 1e7).
func javaFloatString(f float64, bitSize int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	a := math.Abs(f)
	if a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, bitSize)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, bitSize)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		// Java prints at least one fractional digit, the one nearest the
		// value: Float.MIN_VALUE is "1.4E-45", not "1.0E-45".
		mant, _, _ = strings.Cut(strconv.FormatFloat(f, 'E', 1, bitSize), "E")
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// maxPartitionNameBytes is the longest "key=value" directory name a
// partition value may make: file systems (ext4, xfs, HDFS by default) hold
// at most 255 bytes in one path component.
const maxPartitionNameBytes = 255

// CheckPartitionNames returns an error naming the column and row of the
// first value in rec whose partition directory name ("key=value", escaped
// as Java escapes it) would exceed what a file system holds in one path
// component: such a row would be acknowledged into the log and then fail
// every commit of the table.
func (t *Table) CheckPartitionNames(rec arrow.RecordBatch) error {
	for _, k := range t.schema.PartitionKeys {
		idx := rec.Schema().FieldIndices(k)
		if len(idx) == 0 {
			continue
		}
		var at func(i int) string
		switch a := rec.Column(idx[0]).(type) {
		case *array.String:
			at = a.Value
		case *array.LargeString:
			at = a.Value
		case *array.StringView:
			at = a.Value
		default:
			continue // other types render short
		}
		col, key := rec.Column(idx[0]), escapePathName(k)
		for i := 0; i < col.Len(); i++ {
			if col.IsNull(i) {
				continue
			}
			v := at(i)
			if len(key)+1+3*len(v) <= maxPartitionNameBytes {
				continue // even escaped in full it fits
			}
			if n := len(key) + 1 + len(escapePathName(v)); n > maxPartitionNameBytes {
				return fmt.Errorf("partition column %q, row %d: the value makes a partition directory name of %d bytes (%q…), more than the %d a file system holds",
					k, i, n, v[:min(len(v), 32)], maxPartitionNameBytes)
			}
		}
	}
	return nil
}
