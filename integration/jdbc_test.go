package integration

// The Arrow Flight SQL JDBC driver (what DBeaver and other JDBC tools load)
// against the real server: integration/jdbc (JdbcCheck, built by `make
// jdbc-check-jar`) runs statements, prepared statements with parameters set
// one by one and in batches, metadata calls and a bad statement, and checks
// every answer itself. $JDBC_CHECK_DIR overrides where its target/ is.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

func TestJDBC(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	runJdbcCheck(t, srv.Addr, "jdbc")
}

// TestJDBCOlderDriver runs the same walk with the driver's 17.0.0
// release, which tools still ship.
func TestJDBCOlderDriver(t *testing.T) {
	t.Parallel()
	srv := testserver.Start(t, t.TempDir())
	runJdbcCheckWith(t, "lib-17.0.0", srv.Addr, "jdbc17")
}

// runJdbcCheck runs JdbcCheck against addr in a new database db, with
// the JDBC URL's parameters when given, and checks that every check passed.
func runJdbcCheck(t *testing.T, addr, db string, urlParams ...string) {
	t.Helper()
	runJdbcCheckWith(t, "lib", addr, db, urlParams...)
}

// runJdbcCheckWith is runJdbcCheck with the driver in lib, a directory
// of jdbc/target.
func runJdbcCheckWith(t *testing.T, lib, addr, db string, urlParams ...string) {
	t.Helper()
	dir := os.Getenv("JDBC_CHECK_DIR")
	if dir == "" {
		dir = filepath.Join("jdbc", "target")
	}
	dir, err := filepath.Abs(dir)
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "jdbc-check.jar")); err != nil {
		t.Skipf("JDBC check skipped: %s/jdbc-check.jar is not built (run `make jdbc-check-jar`)", dir)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Skip("JDBC check skipped: no `java` on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := os.Stat(filepath.Join(dir, lib)); err != nil {
		t.Skipf("JDBC check skipped: %s/%s is not there (run `make jdbc-check-jar`)", dir, lib)
	}
	cp := filepath.Join(dir, "jdbc-check.jar") + string(os.PathListSeparator) + filepath.Join(dir, lib, "*")
	args := []string{"--add-opens=java.base/java.nio=ALL-UNNAMED", "-Duser.timezone=UTC",
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", cp, "JdbcCheck", addr, db}
	cmd := exec.CommandContext(ctx, "java", append(args, urlParams...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	out := stdout.String()
	require.NoError(t, err, "JdbcCheck:\n%s\n%s", out, stderr.String())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Regexp(t, `^ok \d+ checks$`, lines[len(lines)-1], out)
	for _, want := range []string{"ok executeBatch rows", "ok row 1", "ok timestamp and date parameters", "ok tables", "ok unqualified name after USE", "ok USE default moved the session", "ok catalog property refused",
		"ok declared types", "ok every value read as an object and a string", "ok views by pattern and type", "ok index info answers", "ok streamed change"} {
		require.Contains(t, lines, want, out)
	}
}
