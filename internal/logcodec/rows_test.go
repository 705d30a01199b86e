package logcodec

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/stretchr/testify/require"
)

// An entry with a negative row count and the kinds flag sliced its payload
// with that count and panicked (found by FuzzDecode).
func TestDecodeNegativeRowsIsCorruptNotPanic(t *testing.T) {
	for _, payload := range [][]byte{{1, 1}, {1, 1, 0, 1, 2}, {2, 1, 0, 0, 0, 0, 0, 0, 0, 0}} {
		_, _, err := Decode(payload, -78, memory.DefaultAllocator)
		require.ErrorIs(t, err, ErrCorrupt)
	}
}
