package lake

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Java Paimon reads another snapshot than the latest when a table carries
// one of these options (time travel as a table option). flightd honours
// the ones that name a snapshot, a tag or a time in milliseconds
// (TravelOptions) for reads of the lake table, and refuses the others,
// rather than answer with other rows than Java.
var unsupportedTravelOptions = []string{"scan.timestamp", "scan.watermark", "scan.version"}

// The options TravelOptions honours.
const (
	OptionScanSnapshotID      = "scan.snapshot-id"
	OptionScanTagName         = "scan.tag-name"
	OptionScanTimestampMillis = "scan.timestamp-millis"
)

// TravelOption is the past state a table's options make Java read: a
// snapshot, a tag or a time (Unix milliseconds). Set is false when the
// table reads its latest snapshot.
type TravelOption struct {
	Set      bool
	Option   string // the option that set it
	Snapshot int64
	Tag      string
	Millis   int64
}

// TravelOptions reads the time travel a table's options ask for, and
// refuses (ErrUnsupported) options flightd does not honour: scan.timestamp,
// scan.watermark, scan.version, more than one travel option, and a
// scan.mode other than the ones Java's batch read takes with them (default,
// latest and latest-full without; default, from-snapshot,
// from-snapshot-full and from-timestamp with). An empty value is not an
// option (it removes the option in AlterTableOptions).
func TravelOptions(opts map[string]string) (TravelOption, error) {
	var bad []string
	for _, k := range unsupportedTravelOptions {
		if strings.TrimSpace(opts[k]) != "" {
			bad = append(bad, k)
		}
	}
	var tr TravelOption
	var set []string
	for _, k := range []string{OptionScanSnapshotID, OptionScanTagName, OptionScanTimestampMillis} {
		v := strings.TrimSpace(opts[k])
		if v == "" {
			continue
		}
		set = append(set, k)
		tr.Set, tr.Option = true, k
		switch k {
		case OptionScanSnapshotID:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n <= 0 {
				return TravelOption{}, fmt.Errorf("%w: table option %s = %q: a snapshot id is a positive integer", ErrInvalidOption, k, v)
			}
			tr.Snapshot = n
		case OptionScanTagName:
			tr.Tag = v
		case OptionScanTimestampMillis:
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return TravelOption{}, fmt.Errorf("%w: table option %s = %q: milliseconds since 1970 are an integer", ErrInvalidOption, k, v)
			}
			tr.Millis = n
		}
	}
	if len(set) > 1 {
		return TravelOption{}, fmt.Errorf("%w: table options %s each choose a snapshot to read; set one", ErrUnsupported, strings.Join(set, " and "))
	}
	mode := strings.ToLower(strings.TrimSpace(opts["scan.mode"]))
	ok := map[string]bool{"": true, "default": true, "latest": !tr.Set, "latest-full": !tr.Set,
		"from-snapshot": tr.Snapshot > 0 || tr.Tag != "", "from-snapshot-full": tr.Snapshot > 0 || tr.Tag != "", "from-timestamp": tr.Option == OptionScanTimestampMillis}
	if !ok[mode] {
		bad = append(bad, "scan.mode")
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return TravelOption{}, fmt.Errorf("%w: table option %s would make Java Paimon read another snapshot than flightd does (flightd honours scan.snapshot-id, scan.tag-name and scan.timestamp-millis); it is refused so that every engine reads the same rows",
			ErrUnsupported, strings.Join(bad, ", "))
	}
	return tr, nil
}

// CheckScanOptions refuses the options TravelOptions refuses.
func CheckScanOptions(opts map[string]string) error {
	_, err := TravelOptions(opts)
	return err
}
