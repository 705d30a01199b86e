package lakeerr

import (
	"errors"
	"fmt"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lake/fileio"
	"github.com/flightd/flightd/lakestream"
	"github.com/flightd/flightd/logstore"
)

// Map tags lake, lakestream and logstore errors with the engine's sentinels.
func Map(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, lake.ErrTableNotFound), errors.Is(err, lake.ErrDatabaseNotFound), errors.Is(err, lakestream.ErrNoSnapshot):
		return fmt.Errorf("%w: %w", engine.ErrNotFound, err)
	case errors.Is(err, lake.ErrTableExists), errors.Is(err, lake.ErrDatabaseExists):
		return fmt.Errorf("%w: %w", engine.ErrExists, err)
	case errors.Is(err, lakestream.ErrInvalidBatch), errors.Is(err, lakestream.ErrInvalidOption),
		errors.Is(err, lake.ErrInvalidName), errors.Is(err, fileio.ErrInvalidPath):
		return fmt.Errorf("%w: %w", engine.ErrInvalid, err)
	case errors.Is(err, lakestream.ErrNotRealtime), errors.Is(err, lakestream.ErrSchemaChanged), errors.Is(err, lakestream.ErrOtherLog), errors.Is(err, lakestream.ErrLogBehind),
		errors.Is(err, logstore.ErrFenced),
		errors.Is(err, lakestream.ErrSchemaMismatch):
		return fmt.Errorf("%w: %w", engine.ErrRejected, err)
	case errors.Is(err, lake.ErrUnsupported):
		return fmt.Errorf("%w: %w", engine.ErrUnsupported, err)
	case errors.Is(err, logstore.ErrDiskBudget):
		return fmt.Errorf("%w: %w", engine.ErrExhausted, err)
	case errors.Is(err, logstore.ErrUnavailable):
		return fmt.Errorf("%w: %w", engine.ErrUnavailable, err)
	}
	return err
}
