package manifest

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt marks bytes that do not decode: a manifest, manifest list, index manifest,
	// deletion vector or BinaryRow that is truncated, inconsistent or of an unknown version.
	// Match it with errors.Is. The lake reports corrupt schema, snapshot and tag files
	// with it too, so its text names no one format (it is the text lake.ErrCorrupt had).
	ErrCorrupt = errors.New("lake: corrupt file")
)

// corrupt marks err as ErrCorrupt unless it already is.
func corrupt(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}
