package lakeerr

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
)

func TestMapKeepsTheErrorAndAddsItsSentinel(t *testing.T) {
	for err, want := range map[error]error{
		lake.ErrTableNotFound:                         engine.ErrNotFound,
		lakestream.ErrNoSnapshot:                      engine.ErrNotFound,
		lake.ErrDatabaseExists:                        engine.ErrExists,
		fileio.ErrInvalidPath:                         engine.ErrInvalid,
		lakestream.ErrSchemaChanged:                   engine.ErrRejected,
		logstore.ErrFenced:                            engine.ErrRejected,
		lake.ErrUnsupported:                           engine.ErrUnsupported,
		logstore.ErrDiskBudget:                        engine.ErrExhausted,
		logstore.ErrUnavailable:                       engine.ErrUnavailable,
		lakestream.ErrInvalidBatch:                    engine.ErrInvalid,
		lakestream.ErrSchemaMismatch:                  engine.ErrRejected,
		lakestream.ErrInvalidOption:                   engine.ErrInvalid,
		lake.ErrInvalidName:                           engine.ErrInvalid,
		lake.ErrDatabaseNotFound:                      engine.ErrNotFound,
		lakestream.ErrNotRealtime:                     engine.ErrRejected,
		fmt.Errorf("read x: %w", lake.ErrTableExists): engine.ErrExists,
	} {
		got := Map(err)
		require.ErrorIs(t, got, want, "%v", err)
		require.ErrorIs(t, got, err)
		require.Contains(t, got.Error(), err.Error())
	}
	other := errors.New("something else")
	require.Same(t, other, Map(other))
	require.NoError(t, Map(nil))
}
