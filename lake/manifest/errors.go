package manifest

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt marks bytes that do not decode: a manifest, manifest list, index manifest,
	// deletion vector or BinaryRow that is truncated, inconsistent or of an unknown version.
	// Match it with errors.Is.
	ErrCorrupt = errors.New("manifest: corrupt file")
)

// corrupt marks err as ErrCorrupt unless it already is.
func corrupt(err error) error {
	if errors.Is(err, ErrCorrupt) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}
