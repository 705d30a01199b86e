package integration

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-adbc/go/adbc"
	"github.com/apache/arrow-adbc/go/adbc/driver/flightsql"
	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/internal/testserver"
)

// selfSigned writes a certificate for 127.0.0.1 and localhost and its key
// into dir and returns their paths and the certificate's PEM.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, certPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "flightd test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	return certFile, keyFile, certPEM
}

// TestTLSAndAuthentication: a server with a certificate and a password
// answers ADBC, JDBC and `flightd sql` clients that trust the certificate
// and give the password, and refuses plain connections, missing or wrong
// credentials and forged tokens, with errors that say which.
func TestTLSAndAuthentication(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cert, key, certPEM := selfSigned(t, dir)
	const user, password = "alice", "pa:ss word"
	testserver.Setenv(t, "FLIGHTD_AUTH_PASSWORD", password)
	srv := testserver.Start(t, filepath.Join(dir, "data"), "--tls-cert", cert, "--tls-key", key, "--auth-user", user)
	require.Contains(t, srv.Log(), "uri=grpc+tls://"+srv.Addr)
	ctx := context.Background()

	open := func(opts map[string]string) (adbc.Connection, error) {
		all := map[string]string{adbc.OptionKeyURI: "grpc+tls://" + srv.Addr, flightsql.OptionSSLRootCerts: string(certPEM)}
		for k, v := range opts {
			all[k] = v
		}
		db, err := newDriver().NewDatabase(all)
		if err != nil {
			return nil, err
		}
		t.Cleanup(func() { db.Close() })
		cn, err := db.Open(ctx)
		if err == nil {
			t.Cleanup(func() { cn.Close() })
		}
		return cn, err
	}
	execSQL := func(cn adbc.Connection, sql string) error {
		st, err := cn.NewStatement()
		require.NoError(t, err)
		defer st.Close()
		require.NoError(t, st.SetSqlQuery(sql))
		_, err = st.ExecuteUpdate(ctx)
		return err
	}

	cn, err := open(map[string]string{adbc.OptionKeyUsername: user, adbc.OptionKeyPassword: password})
	require.NoError(t, err)
	require.NoError(t, execSQL(cn, "CREATE DATABASE sec"))
	require.NoError(t, execSQL(cn, "CREATE TABLE sec.t (id BIGINT, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')"))
	require.NoError(t, execSQL(cn, "INSERT INTO sec.t VALUES (1), (2)"))

	_, err = open(map[string]string{adbc.OptionKeyUsername: user, adbc.OptionKeyPassword: "wrong"})
	require.ErrorContains(t, err, "wrong user name or password")
	_, err = open(map[string]string{adbc.OptionKeyUsername: "mallory", adbc.OptionKeyPassword: password})
	require.ErrorContains(t, err, "wrong user name or password")
	// Without credentials: a query (GetFlightInfo) is refused as
	// Unauthenticated, and an update (a DoPut stream, which the client may
	// see end before the status) writes nothing.
	anon, err := open(nil)
	if err == nil {
		st, err := anon.NewStatement()
		require.NoError(t, err)
		require.NoError(t, st.SetSqlQuery("SELECT 1"))
		_, _, err = st.ExecuteQuery(ctx)
		require.ErrorContains(t, err, "Unauthenticated")
		st.Close()
		require.Error(t, execSQL(anon, "CREATE DATABASE intruder"))
		require.NoError(t, execSQL(cn, "CREATE DATABASE intruder"), "the refused CREATE DATABASE created nothing")
	} else {
		require.ErrorContains(t, err, "Unauthenticated")
	}
	// A forged token is refused. Over TLS the client now and then sees the
	// connection end (EOF) before the refusal's status: every attempt must
	// fail, and the refusal must be seen.
	for try := 1; ; try++ {
		forged, err := open(map[string]string{"adbc.flight.sql.authorization_header": "Bearer YWxpY2U.AAAA"})
		if err == nil {
			err = execSQL(forged, "SELECT 1")
			forged.Close()
		}
		require.Error(t, err, "a forged token was accepted")
		if try < 5 && strings.Contains(err.Error(), "EOF") {
			continue
		}
		require.ErrorContains(t, err, "invalid or revoked token")
		break
	}
	// A client that does not speak TLS gets nowhere.
	plain, err := newDriver().NewDatabase(map[string]string{adbc.OptionKeyURI: "grpc://" + srv.Addr, adbc.OptionKeyUsername: user, adbc.OptionKeyPassword: password})
	require.NoError(t, err)
	defer plain.Close()
	if pc, err := plain.Open(ctx); err == nil {
		require.Error(t, execSQL(pc, "SELECT 1"))
		pc.Close()
	}

	// flightd sql: the same server through its own client.
	sqlRun := func(env []string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, testserver.Binary(t), append([]string{"sql", "--server", "grpc+tls://" + srv.Addr}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}
	out, err := sqlRun([]string{"FLIGHTD_PASSWORD=" + password}, "--tls-ca", cert, "--user", user, `SELECT count(*) AS n FROM sec."t$rt"`)
	require.NoError(t, err, out)
	require.Contains(t, out, "(1 row)")
	require.Regexp(t, `(?m)^2\s*$`, out)
	out, err = sqlRun(nil, "--tls-ca", cert, "SELECT 1")
	require.Error(t, err)
	require.Contains(t, out, "Unauthenticated", out)

	// JDBC: the whole JDBC check, over TLS with the certificate trusted and
	// the password given.
	runJdbcCheck(t, srv.Addr, "jdbctls", "useEncryption=true&tlsRootCerts="+url.QueryEscape(cert)+"&user="+user+"&password="+url.QueryEscape(password))
}
