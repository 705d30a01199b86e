package loadfmt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// File is one file to load.
type File struct {
	Path   string // "-" is standard input
	Format Format
	Size   int64 // in bytes; -1 when unknown (standard input)
}

// Stdin is the path that names standard input.
const Stdin = "-"

// Files expands args into the files to load, in order. An argument is
//
//   - a file, taken as it is (its extension says its format, unless
//     format does);
//   - a directory: the files in it and in its subdirectories, sorted by
//     path, whose extension names a format (format, when it is given),
//     leaving out names that begin with '.' or '_' (_SUCCESS and the
//     like);
//   - a glob pattern (*, ?, [a-z]) when no file has that name: the paths
//     it matches, sorted, each taken as above;
//   - "-": standard input, in the format given (not Parquet, which needs
//     to seek).
//
// A file named twice is loaded once.
func Files(args []string, format Format) ([]File, error) {
	var out []File
	seen := map[string]bool{}
	add := func(path string, size int64) error {
		f := format
		if f == "" {
			var ok bool
			if f, ok = ForPath(path); !ok {
				return fmt.Errorf("%s: cannot tell the format from the file name: name one with --format (%s)", path, formatNames())
			}
		}
		if key := filepath.Clean(path); !seen[key] {
			seen[key] = true
			out = append(out, File{Path: path, Format: f, Size: size})
		}
		return nil
	}
	for _, arg := range args {
		if arg == Stdin {
			switch format {
			case "":
				return nil, errors.New("-: reading standard input needs --format (csv, tsv, json or arrow)")
			case Parquet:
				return nil, errors.New("-: a Parquet file cannot be read from standard input (its footer comes last): give its path")
			}
			if !seen[Stdin] {
				seen[Stdin] = true
				out = append(out, File{Path: Stdin, Format: format, Size: -1})
			}
			continue
		}
		paths := []string{arg}
		if _, err := os.Stat(arg); errors.Is(err, fs.ErrNotExist) && strings.ContainsAny(arg, "*?[") {
			m, gerr := filepath.Glob(arg)
			if gerr != nil {
				return nil, fmt.Errorf("%s: %w", arg, gerr)
			}
			// As shells do, * does not match a name that begins with '.'.
			paths = nil
			for _, p := range m {
				if !strings.HasPrefix(filepath.Base(p), ".") || strings.HasPrefix(filepath.Base(arg), ".") {
					paths = append(paths, p)
				}
			}
			if len(paths) == 0 {
				return nil, fmt.Errorf("%s: no file matches", arg)
			}
			sort.Strings(paths)
		}
		for _, p := range paths {
			st, err := os.Stat(p)
			if err != nil {
				return nil, err
			}
			if !st.IsDir() {
				if err := add(p, st.Size()); err != nil {
					return nil, err
				}
				continue
			}
			n := len(out)
			if err := walk(p, format, add); err != nil {
				return nil, err
			}
			if len(out) == n {
				what := "files of a known format (" + extensions("") + ")"
				if format != "" {
					what = "files of format " + string(format) + " (" + extensions(format) + ")"
				}
				return nil, fmt.Errorf("%s: a directory with no %s in it", p, what)
			}
		}
	}
	return out, nil
}

// walk adds the files under dir that are of format (or of any format),
// in path order.
func walk(dir string, format Format, add func(string, int64) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path != dir && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		f, ok := ForPath(path)
		if !ok || (format != "" && f != format) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		return add(path, info.Size())
	}) // WalkDir visits a directory's entries in lexical order
}

func formatNames() string {
	s := make([]string, len(Formats))
	for i, f := range Formats {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// extensions lists the extensions of format (of every format when "").
func extensions(format Format) string {
	all := map[Format]string{
		Parquet: ".parquet, .pq",
		CSV:     ".csv",
		TSV:     ".tsv, .tab",
		JSON:    ".json, .jsonl, .ndjson",
		Arrow:   ".arrow, .arrows, .feather, .ipc",
	}
	if format != "" {
		return all[format]
	}
	var s []string
	for _, f := range Formats {
		s = append(s, all[f])
	}
	return strings.Join(s, ", ")
}
