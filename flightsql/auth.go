package flightsql

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// PasswordAuth checks one user name and password, as Flight clients send
// them: a Handshake with HTTP Basic credentials (ADBC's username/password,
// JDBC's user/password, pyarrow's authenticate_basic_token), answered with
// a bearer token that every later call carries.
//
// Tokens are the user name signed (HMAC-SHA256) with a key derived from the
// server's secret and the password: they stay valid across restarts while
// both are the same, none are kept in memory, and changing the password
// revokes them all. The secret keeps a token from being used to guess the
// password offline. Tokens do not expire otherwise: a token is as good as
// the password, and clients do not renew one (JDBC and ADBC connections
// would break at an expiry).
type PasswordAuth struct {
	user, password [sha256.Size]byte // digests, compared in constant time
	key            []byte
}

var _ flight.BasicAuthValidator = (*PasswordAuth)(nil)

// NewPasswordAuth returns a validator for user and password (neither
// empty); secret is the server's own random key (LoadSecret).
func NewPasswordAuth(user, password string, secret []byte) (*PasswordAuth, error) {
	if user == "" || password == "" {
		return nil, errors.New("flightsql: authentication needs a user name and a password")
	}
	if len(secret) < 16 {
		return nil, errors.New("flightsql: authentication needs a secret of at least 16 bytes")
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(password))
	return &PasswordAuth{user: sha256.Sum256([]byte(user)), password: sha256.Sum256([]byte(password)), key: mac.Sum(nil)}, nil
}

// LoadSecret reads the server's token secret from path, creating it (32
// random bytes, readable by the owner only) when it does not exist.
func LoadSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		if len(b) < 16 {
			return nil, fmt.Errorf("flightsql: token secret %s is too short (%d bytes); delete it to make a new one", path, len(b))
		}
		return b, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("flightsql: read token secret: %w", err)
	}
	b = make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("flightsql: create token secret: %w", err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("flightsql: write token secret: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("flightsql: write token secret: %w", err)
	}
	return b, f.Close()
}

// Middleware returns the server middleware that enforces it on every call
// but the Handshake.
func (a *PasswordAuth) Middleware() flight.ServerMiddleware {
	return flight.CreateServerBasicAuthMiddleware(a)
}

// Validate checks a Handshake's credentials and returns a bearer token.
func (a *PasswordAuth) Validate(user, password string) (string, error) {
	// Digests of equal length, both compared in full: timing tells nothing
	// of either.
	u, p := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	okUser := subtle.ConstantTimeCompare(u[:], a.user[:])
	okPass := subtle.ConstantTimeCompare(p[:], a.password[:])
	if okUser&okPass != 1 {
		return "", status.Error(codes.Unauthenticated, "flightd: wrong user name or password")
	}
	return base64.RawURLEncoding.EncodeToString([]byte(user)) + "." + base64.RawURLEncoding.EncodeToString(a.sign(user)), nil
}

// IsValid checks a bearer token and returns the user it was issued to.
func (a *PasswordAuth) IsValid(token string) (any, error) {
	u, sig, ok := strings.Cut(token, ".")
	user, err1 := base64.RawURLEncoding.DecodeString(u)
	mac, err2 := base64.RawURLEncoding.DecodeString(sig)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, a.sign(string(user))) {
		return nil, status.Error(codes.Unauthenticated, "flightd: invalid or revoked token; authenticate again with the user name and password")
	}
	return string(user), nil
}

func (a *PasswordAuth) sign(user string) []byte {
	mac := hmac.New(sha256.New, a.key)
	mac.Write([]byte(user))
	return mac.Sum(nil)
}
