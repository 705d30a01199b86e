package engine

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyQueryLinksDuckDB keeps DuckDB's cgo inside package query, so that
// every other package builds and tests without it.
func TestOnlyQueryLinksDuckDB(t *testing.T) {
	out, err := exec.Command("go", "list", "-tags", "duckdb_arrow", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/flightd/flightd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	allowed := map[string]bool{
		"github.com/flightd/flightd/query":         true,
		"github.com/flightd/flightd/internal/deps": true,
		// The read-path benchmark's reference: DuckDB reading the same
		// Parquet files in a process of its own, not part of the server.
		"github.com/flightd/flightd/bench/duckref": true,
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || allowed[fields[0]] {
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/duckdb/") {
				t.Errorf("%s imports %s: only package query may link DuckDB", fields[0], imp)
			}
		}
	}
}

// TestServerLeavesSQLToTheEngine: the Flight SQL server reads no SQL
// itself; the engine reads each statement once where it enters
// (Engine.Analyze). So neither the server nor this interface links the
// statement lexer.
func TestServerLeavesSQLToTheEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/flightd/flightd/flightsql").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/flightd/flightd/sqlparse" {
			t.Errorf("package flightsql depends on %s: the engine reads statements (Engine.Analyze)", dep)
		}
	}
}
