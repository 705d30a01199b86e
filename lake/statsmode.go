package lake

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flightd/flightd/lake/paimontype"
)

// Statistics modes, as Java Paimon's SimpleColStatsCollector: table option
// metadata.stats-mode (default truncate(16)) and per column
// fields.<name>.stats-mode.
//
//   - none: no statistics; the column is left out of _VALUE_STATS_COLS
//     (Paimon's dense store, metadata.stats-dense-store = true).
//   - counts: null count only.
//   - full: min, max and null count.
//   - truncate(N): as full, but a CHAR/VARCHAR min is cut to its first N
//     code points and a max longer than N code points is cut and its last
//     code point that can be incremented is incremented (the rest dropped),
//     so that it stays an upper bound; when no code point can be, neither
//     bound is kept (only the null count), as Java does.
//
// Key statistics of primary-key files (_KEY_ columns, system fields for
// Paimon) are truncate(128) unless fields._KEY_<name>.stats-mode says
// otherwise. Partition statistics in manifest lists are full, as Java's.
//
// BINARY/VARBINARY columns have no min/max in any mode (null count only):
// Java takes data-file statistics from the Parquet footer and keeps no
// bounds for them, and a byte array is not comparable for its collectors.
//
// One difference from Java, for correctness: a max whose last kept code
// point is U+D7FF is incremented to U+E000, not to the surrogate U+D800
// (which Java's UTF-8 encoder writes as '?', below the value it bounds).

type statsKind int8

const (
	statsFull statsKind = iota
	statsNone
	statsCounts
	statsTruncate
)

// statsMode is one column's statistics mode.
type statsMode struct {
	kind   statsKind
	length int // truncate(N)
}

var (
	fullStats       = statsMode{kind: statsFull}
	defaultStats    = statsMode{kind: statsTruncate, length: 16}
	keyDefaultStats = statsMode{kind: statsTruncate, length: 128}
	truncatePattern = regexp.MustCompile(`^TRUNCATE\((\d+)\)$`)
)

const (
	statsModeOption = "metadata.stats-mode"
	fieldsPrefix    = "fields."
	statsModeSuffix = ".stats-mode"
)

// parseStatsMode reads a stats-mode option value (case-insensitive).
func parseStatsMode(v string) (statsMode, error) {
	switch u := strings.ToUpper(v); u {
	case "NONE":
		return statsMode{kind: statsNone}, nil
	case "COUNTS":
		return statsMode{kind: statsCounts}, nil
	case "FULL":
		return fullStats, nil
	default:
		if m := truncatePattern.FindStringSubmatch(u); m != nil {
			n, err := strconv.ParseInt(m[1], 10, 32) // Java's Integer.parseInt
			if err != nil || n <= 0 {
				return statsMode{}, fmt.Errorf("truncate length %s is not a positive 32-bit integer", m[1])
			}
			return statsMode{kind: statsTruncate, length: int(n)}, nil
		}
	}
	return statsMode{}, fmt.Errorf("%q is not none, counts, full or truncate(N)", v)
}

// CheckStatsOptions refuses (ErrInvalidOption) a metadata.stats-mode or
// fields.<name>.stats-mode value that is not a statistics mode. An empty
// value is not checked (it removes the option in AlterTableOptions).
func CheckStatsOptions(opts map[string]string) error {
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := opts[k]
		if v == "" || !(k == statsModeOption || strings.HasPrefix(k, fieldsPrefix) && strings.HasSuffix(k, statsModeSuffix)) {
			continue
		}
		if _, err := parseStatsMode(v); err != nil {
			return fmt.Errorf("%w: %s: %s", ErrInvalidOption, k, err)
		}
	}
	return nil
}

// columnStatsMode is the mode of the column named name (a stats column
// name: the field, or _KEY_<field> for key statistics); def applies when
// neither option is set. Options are checked when set, so a bad value here
// (an older schema file) falls back to def.
func (t *Table) columnStatsMode(name string, def statsMode, tableWide bool) statsMode {
	opts := t.schema.Options
	if v, ok := opts[fieldsPrefix+name+statsModeSuffix]; ok {
		if m, err := parseStatsMode(v); err == nil {
			return m
		}
	}
	if tableWide {
		if v, ok := opts[statsModeOption]; ok {
			if m, err := parseStatsMode(v); err == nil {
				return m
			}
		}
	}
	return def
}

// keyStatsModes are the modes of a primary-key file's key statistics.
func (t *Table) keyStatsModes(keyNames []string) []statsMode {
	modes := make([]statsMode, len(keyNames))
	for i, n := range keyNames {
		modes[i] = t.columnStatsMode(keyFieldPrefix+n, keyDefaultStats, false)
	}
	return modes
}

// keyStatsCollector collects the key statistics of a primary-key file.
func (t *Table) keyStatsCollector(keyNames []string, keyTypes []paimontype.DataType) *statsCollector {
	s := newStatsCollector(keyTypes)
	s.modes = t.keyStatsModes(keyNames)
	return s
}

// truncateMin returns the first n code points of s (a lower bound of s).
func truncateMin(s string, n int) string {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i]
}

// truncateMax returns an upper bound of s of at most n code points: s itself
// when it is that short, else its first n code points with the last one
// that can be incremented incremented (and those after it dropped); ok is
// false when there is none (every one is U+10FFFF) or s is not valid UTF-8
// (a prefix of invalid bytes has no code point order to rely on).
func truncateMax(s string, n int) (string, bool) {
	prefix := truncateMin(s, n)
	if len(prefix) == len(s) {
		return s, true
	}
	if !utf8.ValidString(prefix) {
		return "", false
	}
	runes := []rune(prefix)
	for i := len(runes) - 1; i >= 0; i-- {
		next := runes[i] + 1
		if next >= 0xD800 && next <= 0xDFFF {
			next = 0xE000
		}
		if next > utf8.MaxRune {
			continue
		}
		return string(runes[:i]) + string(next), true
	}
	return "", false
}

// applyMode turns full bounds (min, max; nil when unknown) into those of
// mode m for a column of type t (nil, nil: no bounds kept).
func applyMode(m statsMode, t paimontype.DataType, min, max any) (any, any) {
	if min == nil || max == nil {
		return nil, nil
	}
	if t.Root == paimontype.TypeBinary || t.Root == paimontype.TypeVarBinary {
		return nil, nil
	}
	switch m.kind {
	case statsNone, statsCounts:
		return nil, nil
	case statsTruncate:
		lo, ok1 := min.(string)
		hi, ok2 := max.(string)
		if !ok1 || !ok2 {
			return min, max
		}
		hiT, ok := truncateMax(hi, m.length)
		if !ok {
			return nil, nil
		}
		return truncateMin(lo, m.length), hiT
	}
	return min, max
}
