package lake

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
//
// The slow tests that only touch their own catalog call t.Parallel(); a test
// that sets a package variable (a cache size), reads a package-wide cache's
// state or counts goroutines must not, so that it never overlaps another.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
