package lakestream

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// checkPartitionValues refuses a batch that the lake could never commit
// because of a partition value: one holding a NUL byte names no directory
// (Paimon escapes other characters in partition paths, NUL it cannot). The
// log would acknowledge such a row and every tiering round of the table
// would then fail on it, so it is refused at the write, naming the column
// and the row. rec carries the table's columns (after conform).
func checkPartitionValues(m *tableMeta, rec arrow.RecordBatch, table string) error {
	for _, name := range m.table.Schema().PartitionKeys {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) == 0 {
			continue
		}
		var at func(i int) string
		switch a := rec.Column(idx[0]).(type) {
		case *array.String:
			at = a.Value
		case *array.LargeString:
			at = a.Value
		default:
			continue
		}
		col := rec.Column(idx[0])
		for i := 0; i < col.Len(); i++ {
			if col.IsValid(i) && strings.IndexByte(at(i), 0) >= 0 {
				return fmt.Errorf("%w: %s: partition column %q holds a NUL byte in row %d (%q): a partition value names a directory, which cannot hold one",
					ErrInvalidBatch, table, name, i, at(i))
			}
		}
	}
	return nil
}
