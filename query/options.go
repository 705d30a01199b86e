package query

import (
	"log/slog"

	"github.com/apache/arrow-go/v18/arrow/memory"
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
}
