package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/internal/admit"
)

// Limits are the bounds on what clients can make the server hold or do.
// The defaults keep a 2-core, 8 GiB server alive under any single request.
type Limits struct {
	MemoryLimit          string        // DuckDB's memory_limit: a size or a percentage of the machine's memory
	MemoryCeiling        string        // resident memory that cancels running DuckDB statements; "" = derived (memoryCeiling)
	QueryTimeout         time.Duration // per statement, including its DoGet; 0 = none
	MaxConcurrentQueries int           // statements running at once, per admission lane
	MaxQueued            int           // statements waiting for a slot
	QueueTimeout         time.Duration // longest wait for a slot
	StallTimeout         time.Duration // a streaming call whose client takes nothing this long is ended
	MaxEndpoints         int           // endpoints (parts read in parallel) of one query's result
	MaxStreams           int           // streaming reads open at once
	MinEndpointRows      int64         // the least rows of one endpoint's part
	MaxPrepared          int           // open prepared statements
	PreparedIdleTimeout  time.Duration // a prepared statement unused this long is closed
	MaxStatementBytes    string        // SQL text
	MaxMessageBytes      string        // one gRPC message received (an ingest batch), and parameter values per DoPut
	MaxResultBatchBytes  string        // Arrow data of one result message sent
	MaxSpill             string        // disk DuckDB may spill to (all statements together)
	ShutdownGrace        time.Duration // SIGTERM to exit, whatever is running
}

// defaultLimits are the embedded defaults.
func defaultLimits() Limits {
	return Limits{
		MemoryLimit:          "50%",
		QueryTimeout:         10 * time.Minute,
		MaxConcurrentQueries: 4 * servingProcs(),
		MaxQueued:            admit.DefaultMaxQueued,
		QueueTimeout:         admit.DefaultQueueTimeout,
		StallTimeout:         flightsql.DefaultStallTimeout,
		MaxEndpoints:         1,
		MaxStreams:           64,
		MinEndpointRows:      1 << 20,
		MaxPrepared:          flightsql.DefaultMaxPrepared,
		PreparedIdleTimeout:  flightsql.DefaultPreparedTTL,
		MaxStatementBytes:    "1MiB",
		MaxMessageBytes:      "64MiB",
		MaxResultBatchBytes:  "4MiB",
		MaxSpill:             "10GiB",
		ShutdownGrace:        10 * time.Second,
	}
}

// servingProcs is the GOMAXPROCS flightd serves with (schedule): twice the
// cores unless GOMAXPROCS is set.
func servingProcs() int {
	if os.Getenv("GOMAXPROCS") != "" {
		return runtime.GOMAXPROCS(0)
	}
	return 2 * runtime.GOMAXPROCS(0)
}

// limitEnv reads the limits' environment variables.
func (l *Limits) env() error {
	if v := os.Getenv("FLIGHTD_MEMORY_LIMIT"); v != "" {
		l.MemoryLimit = v
	}
	if v := os.Getenv("FLIGHTD_MEMORY_CEILING"); v != "" {
		l.MemoryCeiling = v
	}
	if v := os.Getenv("FLIGHTD_MAX_STATEMENT_BYTES"); v != "" {
		l.MaxStatementBytes = v
	}
	if v := os.Getenv("FLIGHTD_MAX_MESSAGE_BYTES"); v != "" {
		l.MaxMessageBytes = v
	}
	if v := os.Getenv("FLIGHTD_MAX_RESULT_BATCH_BYTES"); v != "" {
		l.MaxResultBatchBytes = v
	}
	if v := os.Getenv("FLIGHTD_MAX_SPILL"); v != "" {
		l.MaxSpill = v
	}
	for name, dst := range map[string]*time.Duration{
		"FLIGHTD_QUERY_TIMEOUT":         &l.QueryTimeout,
		"FLIGHTD_PREPARED_IDLE_TIMEOUT": &l.PreparedIdleTimeout,
		"FLIGHTD_SHUTDOWN_GRACE":        &l.ShutdownGrace,
		"FLIGHTD_QUEUE_TIMEOUT":         &l.QueueTimeout,
		"FLIGHTD_STALL_TIMEOUT":         &l.StallTimeout,
	} {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s=%q: %w", name, v, err)
			}
			*dst = d
		}
	}
	if v := os.Getenv("FLIGHTD_MIN_ENDPOINT_ROWS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("FLIGHTD_MIN_ENDPOINT_ROWS=%q: want a number", v)
		}
		l.MinEndpointRows = n
	}
	for name, dst := range map[string]*int{
		"FLIGHTD_MAX_CONCURRENT_QUERIES": &l.MaxConcurrentQueries,
		"FLIGHTD_MAX_QUEUED":             &l.MaxQueued,
		"FLIGHTD_MAX_PREPARED":           &l.MaxPrepared,
		"FLIGHTD_MAX_ENDPOINTS":          &l.MaxEndpoints,
		"FLIGHTD_MAX_STREAMS":            &l.MaxStreams,
	} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return fmt.Errorf("%s=%q: want a number", name, v)
			}
			*dst = n
		}
	}
	return nil
}

// flags registers the limits' flags on fs.
func (l *Limits) flags(fs *flag.FlagSet) {
	fs.StringVar(&l.MemoryLimit, "memory-limit", l.MemoryLimit, "the server's memory budget: a size (4GiB) or a percentage of the machine's memory, or of its cgroup or address-space limit if lower. DuckDB's operators get half of it (a statement needing more spills, then fails with RESOURCE_EXHAUSTED), ingest batches in flight across all streams a quarter (streams wait for room), and Go's heap is held to it (GOMEMLIMIT, unless set) (env FLIGHTD_MEMORY_LIMIT)")
	fs.StringVar(&l.MemoryCeiling, "memory-ceiling", l.MemoryCeiling, "the server's resident memory above which the DuckDB statements running are cancelled with RESOURCE_EXHAUSTED (a result DuckDB builds whole is not counted by --memory-limit); default halfway from --memory-limit to all the memory the process can have (env FLIGHTD_MEMORY_CEILING)")
	fs.DurationVar(&l.QueryTimeout, "query-timeout", l.QueryTimeout, "longest a statement may run, streaming its result to DoGet included; 0 = no limit (env FLIGHTD_QUERY_TIMEOUT)")
	fs.IntVar(&l.MaxConcurrentQueries, "max-concurrent-queries", l.MaxConcurrentQueries, "statements running at once in each of the two lanes, short (point lookups, small writes, describing) and long (scans and the rest); more wait in the queue; default 4 x GOMAXPROCS (env FLIGHTD_MAX_CONCURRENT_QUERIES)")
	fs.IntVar(&l.MaxQueued, "max-queued", l.MaxQueued, "statements waiting for a slot, both lanes together; more get RESOURCE_EXHAUSTED (a DoGet of a planned statement always waits) (env FLIGHTD_MAX_QUEUED)")
	fs.DurationVar(&l.QueueTimeout, "queue-timeout", l.QueueTimeout, "longest a statement waits for a slot before RESOURCE_EXHAUSTED (a DoGet of a planned statement waits up to --query-timeout) (env FLIGHTD_QUEUE_TIMEOUT)")
	fs.DurationVar(&l.StallTimeout, "stall-timeout", l.StallTimeout, "a result stream whose client takes no data for this long is ended with DEADLINE_EXCEEDED, freeing its slot and memory; 0 = never (env FLIGHTD_STALL_TIMEOUT)")
	fs.IntVar(&l.MaxEndpoints, "max-endpoints", l.MaxEndpoints, "most endpoints of one query's result: above 1, a large scan is split into parts (whole buckets of a primary-key table, files of an append table) that partitioned and distributed clients fetch in parallel; 1 = one endpoint always, which ordinary reads are fastest with (env FLIGHTD_MAX_ENDPOINTS)")
	fs.IntVar(&l.MaxStreams, "max-streams", l.MaxStreams, "streaming reads (a session with streaming on) open at once; they run until the client cancels, outside --max-concurrent-queries and --query-timeout; more get RESOURCE_EXHAUSTED (env FLIGHTD_MAX_STREAMS)")
	fs.Int64Var(&l.MinEndpointRows, "min-endpoint-rows", l.MinEndpointRows, "the least rows of one endpoint's part: a scan of fewer than twice as many has one endpoint (env FLIGHTD_MIN_ENDPOINT_ROWS)")
	fs.IntVar(&l.MaxPrepared, "max-prepared", l.MaxPrepared, "open prepared statements; more get RESOURCE_EXHAUSTED (env FLIGHTD_MAX_PREPARED)")
	fs.DurationVar(&l.PreparedIdleTimeout, "prepared-idle-timeout", l.PreparedIdleTimeout, "a prepared statement unused this long is closed (env FLIGHTD_PREPARED_IDLE_TIMEOUT)")
	fs.StringVar(&l.MaxStatementBytes, "max-statement-bytes", l.MaxStatementBytes, "longest SQL text accepted; longer is INVALID_ARGUMENT (env FLIGHTD_MAX_STATEMENT_BYTES)")
	fs.StringVar(&l.MaxMessageBytes, "max-message-bytes", l.MaxMessageBytes, "largest gRPC message received (one ingest batch), and most parameter values one DoPut binds (env FLIGHTD_MAX_MESSAGE_BYTES)")
	fs.StringVar(&l.MaxResultBatchBytes, "max-result-batch-bytes", l.MaxResultBatchBytes, "most Arrow data in one result message sent: larger batches are sent in slices, a single larger row alone; keep it under the clients' receive limit, 16MiB for ADBC (env FLIGHTD_MAX_RESULT_BATCH_BYTES)")
	fs.StringVar(&l.MaxSpill, "max-spill", l.MaxSpill, "disk DuckDB may spill to under <data-dir>/duckdb-tmp for all statements together (sorts, joins and aggregates larger than --memory-limit); a statement needing more fails (env FLIGHTD_MAX_SPILL)")
	fs.DurationVar(&l.ShutdownGrace, "shutdown-grace", l.ShutdownGrace, "on SIGTERM or SIGINT, the process exits within this long whatever is running: calls get most of it, then they are cut off (env FLIGHTD_SHUTDOWN_GRACE)")
}

func (l Limits) validate() error {
	if _, _, err := l.memoryLimit(); err != nil {
		return err
	}
	if _, err := l.memoryCeiling(); err != nil {
		return err
	}
	if l.MinEndpointRows <= 0 {
		return fmt.Errorf("--min-endpoint-rows must be positive, got %d", l.MinEndpointRows)
	}
	if l.QueryTimeout < 0 {
		return fmt.Errorf("--query-timeout must not be negative, got %s", l.QueryTimeout)
	}
	if l.StallTimeout < 0 {
		return fmt.Errorf("--stall-timeout must not be negative, got %s", l.StallTimeout)
	}
	for _, c := range []struct {
		flag string
		n    int
	}{{"--max-concurrent-queries", l.MaxConcurrentQueries}, {"--max-queued", l.MaxQueued}, {"--max-prepared", l.MaxPrepared}, {"--max-endpoints", l.MaxEndpoints}, {"--max-streams", l.MaxStreams}} {
		if c.n <= 0 {
			return fmt.Errorf("%s must be positive, got %d", c.flag, c.n)
		}
	}
	for _, d := range []struct {
		flag string
		d    time.Duration
	}{{"--prepared-idle-timeout", l.PreparedIdleTimeout}, {"--shutdown-grace", l.ShutdownGrace}, {"--queue-timeout", l.QueueTimeout}} {
		if d.d <= 0 {
			return fmt.Errorf("%s must be positive, got %s", d.flag, d.d)
		}
	}
	if n, err := parseSize(l.MaxStatementBytes); err != nil || n <= 0 || n > 1<<30 {
		return fmt.Errorf("--max-statement-bytes %q: want a size between 1 and 1GiB", l.MaxStatementBytes)
	}
	if n, err := parseSize(l.MaxMessageBytes); err != nil || n < 1<<20 || n > 2<<30-1 {
		return fmt.Errorf("--max-message-bytes %q: want a size between 1MiB and 2GiB", l.MaxMessageBytes)
	}
	if n, err := parseSize(l.MaxResultBatchBytes); err != nil || n < 64<<10 || n > 1<<30 {
		return fmt.Errorf("--max-result-batch-bytes %q: want a size between 64KiB and 1GiB", l.MaxResultBatchBytes)
	}
	if n, err := parseSize(l.MaxSpill); err != nil || n < 1<<20 {
		return fmt.Errorf("--max-spill %q: want a size of at least 1MiB", l.MaxSpill)
	}
	return nil
}

// spillBytes is the validated --max-spill.
func (l Limits) spillBytes() int64 { n, _ := parseSize(l.MaxSpill); return n }

// statementBytes, messageBytes and resultBatchBytes are the validated sizes.
func (l Limits) statementBytes() int { n, _ := parseSize(l.MaxStatementBytes); return int(n) }
func (l Limits) messageBytes() int   { n, _ := parseSize(l.MaxMessageBytes); return int(n) }
func (l Limits) resultBatchBytes() int64 {
	n, _ := parseSize(l.MaxResultBatchBytes)
	return n
}

// minMemoryLimit is the least memory_limit accepted: DuckDB needs some to
// run anything.
const minMemoryLimit = 64 << 20

// memoryLimit resolves --memory-limit to bytes, and says what a
// percentage was taken of.
func (l Limits) memoryLimit() (bytes int64, of string, err error) {
	s := strings.TrimSpace(l.MemoryLimit)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		pct, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || pct <= 0 || pct > 100 {
			return 0, "", fmt.Errorf("--memory-limit %q: want a size (4GiB) or a percentage between 0 and 100 (50%%)", l.MemoryLimit)
		}
		total, of := systemMemory()
		bytes = int64(float64(total) * pct / 100)
		if bytes < minMemoryLimit {
			return 0, "", fmt.Errorf("--memory-limit %s of %s (%d bytes) is less than %d bytes", s, of, total, minMemoryLimit)
		}
		return bytes, fmt.Sprintf("%s of %s", s, of), nil
	}
	bytes, err = parseSize(s)
	if err != nil || bytes < minMemoryLimit {
		return 0, "", fmt.Errorf("--memory-limit %q: want a size of at least 64MiB (e.g. 4GiB) or a percentage (50%%)", l.MemoryLimit)
	}
	return bytes, "", nil
}

// memoryCeiling is the resident memory above which running DuckDB
// statements are cancelled (query.Options.MemoryCeiling): --memory-ceiling,
// else halfway from DuckDB's memory limit to all the memory the process can
// have, so that operators spill at the limit and a result DuckDB builds
// whole, which the limit does not count, is stopped before the kernel stops
// the server. Under an address-space limit (prlimit --as) the process's
// virtual size, far above its resident size, counts too: set the ceiling
// there.
func (l Limits) memoryCeiling() (int64, error) {
	if s := strings.TrimSpace(l.MemoryCeiling); s != "" {
		n, err := parseSize(s)
		if err != nil || n < minMemoryLimit {
			return 0, fmt.Errorf("--memory-ceiling %q: want a size of at least 64MiB (e.g. 6GiB)", l.MemoryCeiling)
		}
		return n, nil
	}
	memLimit, _, err := l.memoryLimit()
	if err != nil {
		return 0, err
	}
	total, _ := systemMemory()
	if total <= memLimit {
		return memLimit, nil
	}
	return memLimit + (total-memLimit)/2, nil
}

// duckDBSize writes bytes as DuckDB's memory_limit takes it.
func duckDBSize(bytes int64) string { return fmt.Sprintf("%dMiB", bytes>>20) }

// systemMemory is the memory this process can have: the machine's, or its
// cgroup's limit, or its address-space limit, whichever is lowest.
func systemMemory() (int64, string) {
	total, of := int64(0), "machine memory"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				fmt.Sscanf(strings.TrimSpace(rest), "%d", &kb)
				total = kb << 10
			}
		}
	}
	if total <= 0 {
		total = 8 << 30 // not Linux: assume the smallest server we aim at
	}
	lower := func(n int64, what string) {
		if n > 0 && n < total {
			total, of = n, what
		}
	}
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(f); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				lower(n, "the cgroup memory limit")
			}
		}
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err == nil && rl.Cur < 1<<62 {
		lower(int64(rl.Cur), "the address-space limit")
	}
	return total, of
}

func (l Limits) String() string {
	return fmt.Sprintf("--memory-limit=%s --memory-ceiling=%s --query-timeout=%s --max-concurrent-queries=%d --max-queued=%d --queue-timeout=%s --stall-timeout=%s --max-streams=%d --max-prepared=%d --prepared-idle-timeout=%s --max-statement-bytes=%s --max-message-bytes=%s --max-result-batch-bytes=%s --max-spill=%s --shutdown-grace=%s",
		l.MemoryLimit, l.MemoryCeiling, l.QueryTimeout, l.MaxConcurrentQueries, l.MaxQueued, l.QueueTimeout, l.StallTimeout, l.MaxStreams, l.MaxPrepared, l.PreparedIdleTimeout, l.MaxStatementBytes, l.MaxMessageBytes, l.MaxResultBatchBytes, l.MaxSpill, l.ShutdownGrace)
}
