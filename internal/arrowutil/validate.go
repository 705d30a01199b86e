package arrowutil

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// ValidateRecord checks every buffer of a batch that came from outside (a
// client's IPC stream, a log entry read back): offsets within their data
// and never decreasing, bitmaps as long as their arrays, UTF-8 strings,
// children as long as their parents claim. The IPC reader checks none of
// this, and an inconsistent batch makes the kernels that read it index out
// of range. arrow-go's own full validation can itself index out of range on
// such a batch (String.ValidateFull slices by offsets before comparing them
// to the data's length), so a panic there is reported as an error too.
func ValidateRecord(rec arrow.RecordBatch) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("arrow/array: inconsistent buffers: %v", p)
		}
	}()
	return array.ValidateRecordFull(rec)
}
