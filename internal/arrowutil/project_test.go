package arrowutil

import (
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/stretchr/testify/require"
)

// TestSchemaReaderRelabelsWithoutCopying: the batches come out under the
// new schema holding the reader's own arrays, and the last release frees
// the reader and its batches.
func TestSchemaReaderRelabelsWithoutCopying(t *testing.T) {
	a := randomArray(rand.New(rand.NewPCG(3, 4)), arrow.PrimitiveTypes.Int64, 10, 2)
	rec := oneColumn(a)
	a.Release()
	r, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec, rec})
	require.NoError(t, err)
	rec.Release()
	md := arrow.NewMetadata([]string{"k"}, []string{"v"})
	sc := arrow.NewSchema([]arrow.Field{{Name: "renamed", Type: arrow.PrimitiveTypes.Int64, Nullable: true, Metadata: md}}, nil)
	sr := NewSchemaReader(r, sc)
	require.Same(t, sc, sr.Schema())
	n := 0
	for sr.Next() {
		b := sr.RecordBatch()
		require.True(t, b.Schema().Equal(sc))
		require.Same(t, rec.Column(0), b.Column(0), "the reader's own array, not a copy")
		n++
	}
	require.NoError(t, sr.Err())
	require.Equal(t, 2, n)
	sr.Retain()
	sr.Release()
	sr.Release()
	require.Nil(t, sr.cur)
}
