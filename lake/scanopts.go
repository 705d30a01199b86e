package lake

import (
	"fmt"
	"sort"
	"strings"
)

// Java Paimon reads another snapshot than the latest when a table carries
// one of these options (time travel as a table option); flightd does not
// honour them yet, so it refuses to set them and to read a table another
// engine set them on, rather than answer with other rows than Java.
var timeTravelOptions = []string{"scan.snapshot-id", "scan.timestamp-millis", "scan.timestamp", "scan.tag-name", "scan.watermark", "scan.version"}

// CheckScanOptions refuses (ErrUnsupported) options among opts that make
// Java read another snapshot than the latest: the time-travel options, and
// a scan.mode other than default, latest and latest-full. An empty value
// is not checked (it removes the option in AlterTableOptions).
func CheckScanOptions(opts map[string]string) error {
	var bad []string
	for _, k := range timeTravelOptions {
		if strings.TrimSpace(opts[k]) != "" {
			bad = append(bad, k)
		}
	}
	switch m := strings.ToLower(strings.TrimSpace(opts["scan.mode"])); m {
	case "", "default", "latest", "latest-full":
	default:
		bad = append(bad, "scan.mode")
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("%w: table option %s would make Java Paimon read another snapshot than the latest, which flightd does not do yet (time travel); it is refused so that every engine reads the same rows",
		ErrUnsupported, strings.Join(bad, ", "))
}
