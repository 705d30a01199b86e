package lake

import (
	"errors"
	"fmt"
)

// ErrUnsupported marks a table whose options flightd cannot honour yet:
// reading or writing it would give wrong rows, so it refuses.
var ErrUnsupported = errors.New("lake: table feature not supported")

// checkSupported refuses reading tables whose rows flightd would get wrong.
// Deletion vectors are read (see attachDeletionVectors).
func (t *Table) checkSupported() error {
	if err := checkReadable(t.schema.Options, t.schema.HasPrimaryKey()); err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	if _, err := SchemaSeqOrder(t.schema); err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	return nil
}

// checkWritable refuses writing (Write, Compact) into tables flightd cannot
// write correctly: everything checkSupported refuses, and deletion vectors.
// The data-file.prefix of a table created elsewhere is checked too: it names the files
// written here.
func (t *Table) checkWritable() error {
	if err := CheckSupported(t.schema.Options, t.schema.HasPrimaryKey()); err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	if _, err := SchemaSeqOrder(t.schema); err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	if err := checkPathOption("data-file.prefix", t.schema.Options["data-file.prefix"]); err != nil {
		return fmt.Errorf("%s: %w", t.FullName(), err)
	}
	return nil
}

// CheckSupported refuses table options flightd cannot write with: merge
// engines other than deduplicate, and deletion vectors (flightd reads such tables but does not write or compact them: its
// level-0 files would be invisible to Paimon's batch reads of a primary-key
// table, and it maintains no deletion-vector index).
func CheckSupported(opts map[string]string, primaryKey bool) error {
	if err := checkReadable(opts, primaryKey); err != nil {
		return err
	}
	if DeletionVectorsEnabled(opts) {
		return fmt.Errorf("%w: writing a table with deletion-vectors.enabled; flightd only reads such tables", ErrUnsupported)
	}
	return nil
}

// checkReadable refuses table options whose rows flightd would read wrong.
func checkReadable(opts map[string]string, primaryKey bool) error {
	if primaryKey {
		if me := opts["merge-engine"]; me != "" && me != "deduplicate" {
			return fmt.Errorf("%w: merge-engine %q; flightd reads and writes the deduplicate engine only", ErrUnsupported, me)
		}
	}
	return nil
}
