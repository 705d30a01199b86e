package query

import (
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/lakestream"
)

// DefaultDatabase is where unqualified table names resolve.
const DefaultDatabase = "default"

// Options configure an Engine.
type Options struct {
	Logger    *slog.Logger
	Allocator memory.Allocator
	// Threads caps DuckDB's worker threads (0 = DuckDB's default).
	Threads int
	// MemoryLimit is DuckDB's memory_limit setting, e.g. "4GB" ("" = default).
	MemoryLimit string
	// TempDir is where DuckDB spills what does not fit in MemoryLimit; ""
	// turns spilling off (an operation that needs more fails instead). It
	// must not be the directory that holds the log and auth.key.
	TempDir string
	// Drain moves a table's log into the lake; ALTER TABLE ... SET
	// ('lakestream.enabled' = 'false') needs it (tiering.Service.Drain).
	Drain lakestream.DrainFunc
}
