package lake

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrInvalidName marks a database or table name that cannot name a directory of the warehouse.
var ErrInvalidName = errors.New("lake: invalid name")

// ErrInvalidOption marks a table option value that flightd refuses (package lakestream's
// ErrInvalidOption is the same error).
var ErrInvalidOption = errors.New("invalid table option")

// maxNameBytes bounds a database or table name: one path element (255 bytes on common
// filesystems), with room for the ".db" suffix.
const maxNameBytes = 255 - len(dbSuffix)

// systemDatabase is Paimon's system database; Java refuses to create it.
const systemDatabase = "sys"

// nameProblem says why n cannot be a path element of the warehouse, or "".
func nameProblem(n string) string {
	switch {
	case n == "":
		return "is empty"
	case n == "." || n == "..":
		return "is a relative directory"
	case !utf8.ValidString(n):
		return "is not valid UTF-8"
	case strings.ContainsAny(n, "/\\"):
		return "contains a path separator ('/' or '\\')"
	case strings.ContainsFunc(n, unicode.IsControl):
		return "contains a control character"
	}
	return ""
}

// validName checks a database or table name: a single path element of the warehouse. Names
// starting with '.' are hidden (temporary files use them) and refused too.
func validName(kind, n string) error {
	p := nameProblem(n)
	switch {
	case p != "":
	case strings.HasPrefix(n, "."):
		p = "starts with '.'"
	case len(n) > maxNameBytes:
		p = fmt.Sprintf("is longer than %d bytes", maxNameBytes)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s name %q %s", ErrInvalidName, kind, n, p)
}

// validNewDatabase adds what Java Paimon refuses at CREATE DATABASE: its system database.
func validNewDatabase(n string) error {
	if err := validName("database", n); err != nil {
		return err
	}
	if n == systemDatabase {
		return fmt.Errorf("%w: database name %q is Paimon's system database", ErrInvalidName, n)
	}
	return nil
}

// validNewTable adds what Java Paimon refuses at CREATE TABLE: '$' separates a table from its
// branch or system table (t$snapshots, t$branch_b).
func validNewTable(db, n string) error {
	if err := validName("table", n); err != nil {
		return err
	}
	if db == systemDatabase {
		return fmt.Errorf("%w: no table can be created in Paimon's system database %q", ErrInvalidName, db)
	}
	if strings.Contains(n, "$") {
		return fmt.Errorf("%w: table name %q contains '$', which names a system table or branch", ErrInvalidName, n)
	}
	return nil
}

// Table options that name files or directories (Paimon's CoreOptions).
var (
	// prefixOptions become the start of file names in the table's directories.
	prefixOptions = []string{"data-file.prefix", "changelog-file.prefix"}
	// nameOptions become one path element (branch/branch-<name>).
	nameOptions = []string{"branch", "scan.fallback-branch"}
	// locationOptions would place files elsewhere: flightd keeps every file of a table in its
	// directory (and does not honour these), so they are refused.
	locationOptions = []string{"path", "data-file.path-directory", "data-file.external-paths", "global-index.external-path"}
)

// CheckPathOptions refuses table options that would put files outside their table directory
// (ErrInvalidOption): data-file.prefix and changelog-file.prefix must be plain file-name
// prefixes (no '/', '\\', "..", control characters, no leading '.'); branch and
// scan.fallback-branch plain names; partition.default-name (escaped where it becomes a path
// element) must hold no NUL; path, data-file.path-directory, data-file.external-paths and
// global-index.external-path cannot be set. An empty value is not checked (it removes the
// option in AlterTableOptions). CREATE TABLE and ALTER TABLE SET check their options with it.
func CheckPathOptions(opts map[string]string) error {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first problem by key, whatever the map order
	for _, k := range keys {
		if err := checkPathOption(k, opts[k]); err != nil {
			return err
		}
	}
	return nil
}

func checkPathOption(k, v string) error {
	if v == "" {
		return nil
	}
	bad := func(why string) error {
		return fmt.Errorf("%w '%s' = %q: %s", ErrInvalidOption, k, v, why)
	}
	switch {
	case slices.Contains(prefixOptions, k):
		if p := prefixProblem(v); p != "" {
			return bad("must be a plain file-name prefix: it " + p)
		}
	case slices.Contains(nameOptions, k):
		if p := nameProblem(v); p != "" {
			return bad("must be a plain name: it " + p)
		}
	case k == "partition.default-name":
		if strings.IndexByte(v, 0) >= 0 {
			return bad("contains a NUL byte")
		}
	case slices.Contains(locationOptions, k):
		return bad("flightd keeps every file of a table in the table's directory")
	}
	return nil
}

// prefixProblem says why v cannot start a file name, or "".
func prefixProblem(v string) string {
	switch {
	case !utf8.ValidString(v):
		return "is not valid UTF-8"
	case strings.ContainsAny(v, "/\\"):
		return "contains a path separator ('/' or '\\')"
	case strings.Contains(v, ".."):
		return "contains '..'"
	case strings.ContainsFunc(v, unicode.IsControl):
		return "contains a control character"
	case strings.HasPrefix(v, "."):
		return "starts with '.' (hidden and temporary files do)"
	case len(v) > 128:
		return "is longer than 128 bytes"
	}
	return ""
}
