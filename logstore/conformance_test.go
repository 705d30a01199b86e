package logstore_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/logstore/logtest"
)

// TestConformance runs the log conformance suite against the Badger store.
func TestConformance(t *testing.T) {
	logtest.Run(t, logtest.Harness{
		Open: func(t *testing.T, dir string) logstore.Log {
			s, err := logstore.Open(dir, logstore.Options{SyncWrites: false})
			require.NoError(t, err)
			return s
		},
		LargeEntry: 3 << 20,
	})
}
