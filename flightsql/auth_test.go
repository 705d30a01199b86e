package flightsql

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestPasswordAuth(t *testing.T) {
	key, err := LoadSecret(filepath.Join(t.TempDir(), "auth.key"))
	require.NoError(t, err)
	a, err := NewPasswordAuth("alice", "secret", key)
	require.NoError(t, err)
	tok, err := a.Validate("alice", "secret")
	require.NoError(t, err)
	who, err := a.IsValid(tok)
	require.NoError(t, err)
	require.Equal(t, "alice", who)

	// A restarted server with the same password and secret accepts the
	// token; one with another secret does not.
	again, err := NewPasswordAuth("alice", "secret", key)
	require.NoError(t, err)
	_, err = again.IsValid(tok)
	require.NoError(t, err)
	other, err := NewPasswordAuth("alice", "secret", []byte("another secret of some length"))
	require.NoError(t, err)
	_, err = other.IsValid(tok)
	require.Equal(t, codes.Unauthenticated, status.Code(err))

	unauth := func(err error) {
		t.Helper()
		require.Equal(t, codes.Unauthenticated, status.Code(err), err)
	}
	_, err = a.Validate("alice", "Secret")
	unauth(err)
	_, err = a.Validate("bob", "secret")
	unauth(err)
	// Another password revokes every token; forged and garbled ones fail.
	changed, err := NewPasswordAuth("alice", "new", key)
	require.NoError(t, err)
	_, err = changed.IsValid(tok)
	unauth(err)
	for _, bad := range []string{"", "alice", "YWxpY2U.", "YWxpY2U.AAAA", tok + "x", "Ym9i" + tok[len("YWxpY2U"):]} {
		_, err = a.IsValid(bad)
		unauth(err)
	}
	_, err = NewPasswordAuth("alice", "", key)
	require.Error(t, err)
}

func TestLoadSecretKeepsItsKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.key")
	k1, err := LoadSecret(path)
	require.NoError(t, err)
	require.Len(t, k1, 32)
	k2, err := LoadSecret(path)
	require.NoError(t, err)
	require.Equal(t, k1, k2)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	require.NoError(t, os.WriteFile(path, []byte("short"), 0o600))
	_, err = LoadSecret(path)
	require.ErrorContains(t, err, "too short")
}
