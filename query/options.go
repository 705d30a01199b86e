package query

import (
	"context"
	"log/slog"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/internal/admit"
	"github.com/flightd/flightd/lake"
	"github.com/flightd/flightd/lakestream"
)

// Maintenance runs the table maintenance Paimon's procedures ask for
// (tiering.Service), under the protections flightd's own maintenance
// keeps: snapshots that running reads and the log retention need stay,
// and a compaction does not run beside a tiering round.
type Maintenance interface {
	ExpireTableWith(ctx context.Context, db, name string, now time.Time, opts lake.ExpireOptions) (int, error)
	CompactTable(ctx context.Context, db, name string) (int64, error)
}

// DefaultDatabase is where unqualified table names resolve in a session
// that chose no database (engine.WithDatabase).
const DefaultDatabase = engine.DefaultDatabase

// Options configure an Engine.
type Options struct {
	Logger    *slog.Logger
	Allocator memory.Allocator
	// Threads caps DuckDB's worker threads (0 = DuckDB's default).
	Threads int
	// MemoryLimit is DuckDB's memory_limit setting, e.g. "4GB" ("" = default).
	MemoryLimit string
	// MemoryCeiling is the process's resident memory, in bytes, above which
	// the DuckDB statements running are cancelled and new ones refused
	// until it is back under (RESOURCE_EXHAUSTED): DuckDB's memory_limit
	// does not count a result it materialises (results with types the
	// Arrow path does not give; package memguard). 0: off.
	MemoryCeiling int64
	// TempDir is where DuckDB spills what does not fit in MemoryLimit; ""
	// turns spilling off (an operation that needs more fails instead). It
	// must not be the directory that holds the log and auth.key.
	TempDir string
	// MaxTempBytes bounds what DuckDB spills into TempDir, for all
	// statements together (DuckDB's max_temp_directory_size; its own
	// default is 90% of the free disk, which a client's query could take
	// from the log and the lake). 0 leaves DuckDB's default.
	MaxTempBytes int64
	// PartRows is the least rows of one part of a partitioned scan
	// (Partition): a scan of fewer than twice as many stays one part.
	// 0: DefaultPartRows.
	PartRows int64
	// Drain moves a table's log into the lake; ALTER TABLE ... SET
	// ('lakestream.enabled' = 'false') needs it (tiering.Service.Drain).
	Drain lakestream.DrainFunc
	// Maintenance runs CALL sys.expire_snapshots and sys.compact
	// (tiering.Service); nil: they are refused.
	Maintenance Maintenance
	// Cluster is what sys.nodes lists and sys.tiering's owner column
	// says: the cluster this node is one of, or lakestream.Alone. nil:
	// lakestream.Alone with no address, started when New was called.
	Cluster lakestream.Cluster
	// Admission is the server's admission controller: sys.statements lists
	// its statements and CALL sys.cancel(id) ends one (nil: none listed).
	Admission *admit.Controller
	// IngestMemory bounds the bytes of ingest batches held in memory
	// across all ingest streams, from their receipt until they are
	// durable in the log: a stream waits for room before it reads its next
	// batch (gRPC flow control then holds the client). 0: no bound.
	IngestMemory int64
	// IngestReserve is what a stream reserves before reading its first
	// batch (the largest batch it may receive). 0: 64 MiB.
	IngestReserve int64
	// IngestWait is the longest a stream waits for IngestMemory before
	// ErrExhausted. 0: a minute.
	IngestWait time.Duration

	// ingestQueueBytes is ingest.Options.QueueBytes (tests; 0: the default).
	ingestQueueBytes int64
}
