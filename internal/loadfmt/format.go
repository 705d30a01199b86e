package loadfmt

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Format is a file format load reads.
type Format string

// The formats.
const (
	CSV     Format = "csv"     // RFC 4180 with a header line
	TSV     Format = "tsv"     // CSV with tabs between fields
	JSON    Format = "json"    // objects one after another (JSON lines) or in one array
	Parquet Format = "parquet" // a Parquet file
	Arrow   Format = "arrow"   // an Arrow IPC file or stream
)

// Formats lists the formats, in the order help texts name them.
var Formats = []Format{Parquet, CSV, TSV, JSON, Arrow}

// ParseFormat reads a format's name (case-insensitive; jsonl and ndjson
// are json, ipc and feather arrow).
func ParseFormat(s string) (Format, error) {
	switch v := Format(strings.ToLower(strings.TrimSpace(s))); v {
	case "jsonl", "ndjson":
		return JSON, nil
	case "ipc", "feather", "arrows":
		return Arrow, nil
	case CSV, TSV, JSON, Parquet, Arrow:
		return v, nil
	}
	return "", fmt.Errorf("unknown format %q (known: parquet, csv, tsv, json, jsonl, arrow)", s)
}

// ForPath chooses a format by a file name's extension: .parquet or .pq,
// .csv, .tsv or .tab, .json, .jsonl or .ndjson, .arrow, .arrows, .feather
// or .ipc; text formats may be compressed (.gz, .zst). ok is false for
// any other name.
func ForPath(path string) (f Format, ok bool) {
	ext := strings.ToLower(filepath.Ext(path))
	if c := compressionOf(path); c != "" {
		ext = strings.ToLower(filepath.Ext(strings.TrimSuffix(path, filepath.Ext(path))))
		switch ext {
		case ".csv", ".tsv", ".tab", ".json", ".jsonl", ".ndjson":
		default:
			return "", false
		}
	}
	switch ext {
	case ".parquet", ".pq":
		return Parquet, true
	case ".csv":
		return CSV, true
	case ".tsv", ".tab":
		return TSV, true
	case ".json", ".jsonl", ".ndjson":
		return JSON, true
	case ".arrow", ".arrows", ".feather", ".ipc":
		return Arrow, true
	}
	return "", false
}

// compressionOf is "gzip" or "zstd" for a name ending in .gz or .zst.
func compressionOf(path string) string {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".gz":
		return "gzip"
	case ".zst":
		return "zstd"
	}
	return ""
}
