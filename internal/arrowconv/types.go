package arrowconv

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
)

// PaimonType spells an Arrow type as the Paimon type a table created from
// it gets: one that holds every value of the Arrow type exactly, so that
// the batch a table is created from is always accepted (Record brings its
// values to the table's Arrow types). A type without one is refused,
// saying what to send instead.
func PaimonType(t arrow.DataType) (string, error) {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return "BOOLEAN", nil
	case *arrow.Int8Type:
		return "TINYINT", nil
	case *arrow.Int16Type, *arrow.Uint8Type:
		return "SMALLINT", nil
	case *arrow.Int32Type, *arrow.Uint16Type:
		return "INT", nil
	case *arrow.Int64Type, *arrow.Uint32Type:
		return "BIGINT", nil
	case *arrow.Uint64Type:
		return "DECIMAL(20, 0)", nil // up to 18446744073709551615
	case *arrow.Float16Type, *arrow.Float32Type:
		return "FLOAT", nil
	case *arrow.Float64Type:
		return "DOUBLE", nil
	case *arrow.StringType, *arrow.LargeStringType, *arrow.StringViewType:
		return "STRING", nil
	case *arrow.BinaryType, *arrow.LargeBinaryType, *arrow.BinaryViewType:
		return "BYTES", nil
	case *arrow.FixedSizeBinaryType:
		return fmt.Sprintf("BINARY(%d)", t.ByteWidth), nil
	case *arrow.Date32Type:
		return "DATE", nil
	case *arrow.Date64Type:
		// Milliseconds of whole days (the Arrow format says so); a value
		// with a time of day is refused when written.
		return "DATE", nil
	case arrow.DecimalType:
		if t.GetPrecision() > 38 {
			//lint:ignore ST1005 the message begins with a name (Arrow)
			return "", fmt.Errorf("Arrow type %s has no Paimon counterpart: Paimon decimals hold at most 38 digits; send decimal128 with precision 38 or less", t)
		}
		return fmt.Sprintf("DECIMAL(%d, %d)", t.GetPrecision(), t.GetScale()), nil
	case *arrow.TimestampType:
		p := map[arrow.TimeUnit]int{arrow.Second: 0, arrow.Millisecond: 3, arrow.Microsecond: 6, arrow.Nanosecond: 9}[t.Unit]
		if t.TimeZone != "" {
			// An instant: the zone only says how it was displayed.
			return fmt.Sprintf("TIMESTAMP(%d) WITH LOCAL TIME ZONE", p), nil
		}
		return fmt.Sprintf("TIMESTAMP(%d)", p), nil
	case *arrow.Time32Type:
		return "TIME(3)", nil
	case *arrow.Time64Type:
		// Paimon stores TIME as milliseconds of the day, whatever its
		// declared precision: the column is TIME(3), and a value with a
		// finer part is refused when written (ingestConvert), never cut.
		// So pandas' and pyarrow's time64[us] columns of ordinary times
		// are taken.
		return "TIME(3)", nil
	case *arrow.DictionaryType:
		return PaimonType(t.ValueType)
	case *arrow.ListType:
		return arrayOf(t.ElemField())
	case *arrow.LargeListType:
		return arrayOf(t.ElemField())
	case *arrow.FixedSizeListType:
		return arrayOf(t.ElemField())
	case *arrow.MapType:
		k, err := PaimonType(t.KeyType())
		if err != nil {
			return "", fmt.Errorf("map key: %w", err)
		}
		v, err := fieldType(t.ItemField())
		if err != nil {
			return "", fmt.Errorf("map value: %w", err)
		}
		return "MAP<" + k + " NOT NULL, " + v + ">", nil
	case *arrow.StructType:
		if t.NumFields() == 0 {
			//lint:ignore ST1005 the message begins with a name (Arrow)
			return "", fmt.Errorf("Arrow type %s has no Paimon counterpart: a ROW needs at least one field", t)
		}
		parts := make([]string, t.NumFields())
		for i, f := range t.Fields() {
			ft, err := fieldType(f)
			if err != nil {
				return "", fmt.Errorf("field %q: %w", f.Name, err)
			}
			parts[i] = "`" + strings.ReplaceAll(f.Name, "`", "``") + "` " + ft
		}
		return "ROW<" + strings.Join(parts, ", ") + ">", nil
	case *arrow.NullType:
		//lint:ignore ST1005 the message begins with a name (Arrow)
		return "", fmt.Errorf("Arrow type null (a column of nulls only) has no Paimon counterpart: give the column the type its values will have")
	}
	//lint:ignore ST1005 the message begins with a name (Arrow)
	return "", fmt.Errorf("Arrow type %s has no Paimon counterpart; cast the column to a type that has one (integers, floats, decimals, strings, binary, dates, timestamps, time32[ms], lists, structs, maps)", t)
}

// arrayOf is the Paimon ARRAY of a list's element field.
func arrayOf(elem arrow.Field) (string, error) {
	e, err := fieldType(elem)
	if err != nil {
		return "", fmt.Errorf("list element: %w", err)
	}
	return "ARRAY<" + e + ">", nil
}

// fieldType is PaimonType of a nested field, NOT NULL when it is.
func fieldType(f arrow.Field) (string, error) {
	t, err := PaimonType(f.Type)
	if err != nil {
		return "", err
	}
	if !f.Nullable {
		t += " NOT NULL"
	}
	return t, nil
}
