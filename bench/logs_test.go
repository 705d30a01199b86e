package bench

import (
	"os"
	"strings"
	"testing"

	"github.com/flightd/flightd/internal/testkafka"
)

// benchLogs lists the logs a benchmark runs against, side by side in one
// run: FLIGHTD_BENCH_LOGS, comma-separated badger and kafka (default
// badger). kafka needs FLIGHTD_KAFKA_LIB, as make test sets it (`make
// bench-kafka` does both).
func benchLogs() []string {
	v := os.Getenv("FLIGHTD_BENCH_LOGS")
	if v == "" {
		return []string{"badger"}
	}
	return strings.Split(v, ",")
}

// logArgs returns the serve flags for log: none for badger; for kafka a
// real broker of b's own, started now and stopped when b ends (a fresh
// one for each benchmark, so that none inherits another's topics).
func logArgs(b *testing.B, log string) []string {
	switch log {
	case "badger":
		return nil
	case "kafka":
		return []string{"--log", "kafka://" + testkafka.Start(b).Addr()}
	}
	b.Fatalf("FLIGHTD_BENCH_LOGS: unknown log %q (want badger or kafka)", log)
	return nil
}
