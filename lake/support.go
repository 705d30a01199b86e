package lake

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnsupported marks a table whose options flightd cannot honour yet:
// reading or writing it would give wrong rows, so it refuses.
var ErrUnsupported = errors.New("lake: table feature not supported")

// checkSupported refuses tables whose rows flightd would get wrong.
func (t *Table) checkSupported() error {
	if err := CheckSupported(t.schema.Options, t.schema.HasPrimaryKey()); err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	return nil
}

// CheckSupported refuses table options flightd cannot honour yet: merge
// engines other than deduplicate, user-defined sequence fields, and
// deletion vectors (not applied yet).
func CheckSupported(opts map[string]string, primaryKey bool) error {
	if primaryKey {
		if me := opts["merge-engine"]; me != "" && me != "deduplicate" {
			return fmt.Errorf("%w: merge-engine %q; flightd reads and writes the deduplicate engine only", ErrUnsupported, me)
		}
		if sf := opts["sequence.field"]; sf != "" {
			return fmt.Errorf("%w: sequence.field %q; flightd orders versions by write sequence only", ErrUnsupported, sf)
		}
	}
	if strings.EqualFold(opts["deletion-vectors.enabled"], "true") {
		return fmt.Errorf("%w: deletion vectors, which flightd does not apply yet", ErrUnsupported)
	}
	return nil
}
