package lake

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightd/flightd/lake/paimontype"
)

// Table options that order the versions of a key by columns of the row
// instead of by arrival (Paimon's UserDefinedSeqComparator).
const (
	OptionSequenceField     = "sequence.field"
	OptionSequenceSortOrder = "sequence.field.sort-order"
)

// SeqOrder orders the versions of one key by a table's sequence.field
// columns, as Paimon's merge does: of two versions the one with the larger
// sequence values wins, and equal values go to the later arrival (the
// larger _SEQUENCE_NUMBER, then the later position). The columns compare
// in order, each as Paimon compares the type (strings and binaries as
// unsigned bytes). A null is smaller than every value in either sort
// order: Paimon generates the comparator with nulls first and, for
// sequence.field.sort-order = descending, negates only the comparison of
// two values.
type SeqOrder struct {
	Fields     []string
	Descending bool
	types      []paimontype.DataType
}

// SchemaSeqOrder returns the table's sequence order, nil when it has none,
// or an error naming an option flightd cannot honour: a sequence field that
// is not a column or is of a nested type, or a sort order other than
// ascending or descending.
func SchemaSeqOrder(s *paimontype.TableSchema) (*SeqOrder, error) {
	return newSeqOrder(s.Options, func(name string) (paimontype.DataType, bool) {
		if i := s.FieldIndex(name); i >= 0 {
			return s.Fields[i].Type, true
		}
		return paimontype.DataType{}, false
	})
}

// CheckSequenceField refuses, before a table is created, the sequence
// options SchemaSeqOrder would refuse.
func CheckSequenceField(sc paimontype.Schema) error {
	_, err := newSeqOrder(sc.Options, func(name string) (paimontype.DataType, bool) {
		for _, c := range sc.Columns {
			if c.Name == name {
				return c.Type, true
			}
		}
		return paimontype.DataType{}, false
	})
	return err
}

func newSeqOrder(opts map[string]string, column func(name string) (paimontype.DataType, bool)) (*SeqOrder, error) {
	v := strings.TrimSpace(opts[OptionSequenceField])
	if v == "" {
		return nil, nil
	}
	o := &SeqOrder{}
	for _, name := range strings.Split(v, ",") {
		name = strings.TrimSpace(name)
		t, ok := column(name)
		if !ok {
			return nil, fmt.Errorf("%w: %s = %q names no column %q", ErrInvalidOption, OptionSequenceField, v, name)
		}
		if !statsSupported(t) {
			return nil, fmt.Errorf("%w: %s column %q is %s; a sequence field must be of a scalar type", ErrUnsupported, OptionSequenceField, name, t)
		}
		o.Fields = append(o.Fields, name)
		o.types = append(o.types, t)
	}
	switch strings.ToLower(strings.TrimSpace(opts[OptionSequenceSortOrder])) {
	case "", "ascending":
	case "descending":
		o.Descending = true
	default:
		return nil, fmt.Errorf("%w: %s = %q: expected ascending or descending", ErrInvalidOption, OptionSequenceSortOrder, opts[OptionSequenceSortOrder])
	}
	return o, nil
}

// arrowFields returns the sequence fields of ts, for reading them with a
// record's other columns.
func (o *SeqOrder) arrowFields(ts *paimontype.TableSchema) []arrow.Field {
	full := ts.ArrowSchema()
	out := make([]arrow.Field, len(o.Fields))
	for i, n := range o.Fields {
		out[i] = full.Field(ts.FieldIndex(n))
	}
	return out
}

// columns returns the positions of the sequence fields in rec's schema.
func (o *SeqOrder) columns(sc *arrow.Schema) ([]int, error) {
	idx := make([]int, len(o.Fields))
	for i, n := range o.Fields {
		j := sc.FieldIndices(n)
		if len(j) != 1 {
			return nil, fmt.Errorf("lake: sequence field %q is not a column of the rows", n)
		}
		idx[i] = j[0]
	}
	return idx, nil
}

// Rows returns the order of two rows of rec by their sequence values
// (negative: a is older). rec must carry the sequence fields by name.
func (o *SeqOrder) Rows(rec arrow.RecordBatch) (func(a, b int) int, error) {
	return o.Across(rec, rec)
}

// versions is Rows, or nil for a table without sequence fields (o nil):
// the order the merges put between a key and the sequence number.
func (o *SeqOrder) versions(rec arrow.RecordBatch) (func(a, b int) int, error) {
	if o == nil {
		return nil, nil
	}
	return o.Rows(rec)
}

// Across is Rows for row a of x against row b of y.
func (o *SeqOrder) Across(x, y arrow.RecordBatch) (func(a, b int) int, error) {
	xi, err := o.columns(x.Schema())
	if err != nil {
		return nil, err
	}
	yi, err := o.columns(y.Schema())
	if err != nil {
		return nil, err
	}
	cmps := make([]func(a, b int) int, len(xi))
	for i := range xi {
		xc, yc, t := x.Column(xi[i]), y.Column(yi[i]), o.types[i]
		f, ok := javaFloatCompare(xc, yc)
		if !ok {
			f, ok = columnsCompare(xc, yc)
		}
		if !ok {
			f = func(a, b int) int { return compareValues(valueAt(xc, a, t), valueAt(yc, b, t)) }
		}
		if o.Descending { // nulls stay smallest: negate only two values' order
			values := f
			f = nullsFirst(xc, yc, func(a, b int) int { return -values(a, b) })
		}
		cmps[i] = f
	}
	return chainCompare(cmps), nil
}

// javaFloatCompare orders two FLOAT or DOUBLE columns as Paimon's generated
// comparator does, with < and >: a NaN equals every value (the later
// arrival wins) and -0 equals 0, unlike the total order keys use. ok is
// false for other types.
func javaFloatCompare(x, y arrow.Array) (f func(a, b int) int, ok bool) {
	var xs, ys func(i int) float64
	switch a := x.(type) {
	case *array.Float32:
		b, isF := y.(*array.Float32)
		if !isF {
			return nil, false
		}
		xs, ys = func(i int) float64 { return float64(a.Value(i)) }, func(i int) float64 { return float64(b.Value(i)) }
	case *array.Float64:
		b, isF := y.(*array.Float64)
		if !isF {
			return nil, false
		}
		xs, ys = a.Value, b.Value
	default:
		return nil, false
	}
	return nullsFirst(x, y, func(i, j int) int {
		switch u, v := xs(i), ys(j); {
		case u > v:
			return 1
		case u < v:
			return -1
		}
		return 0
	}), true
}
