package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/flightd/flightd/lake/fileio/s3"
)

// Config is everything `flightd serve` can be told.
type Config struct {
	Listen          string        // host:port of the Flight SQL endpoint
	DataDir         string        // root of flightd's state; the log lives in <DataDir>/log
	Warehouse       string        // Paimon warehouse; default <DataDir>/warehouse
	TieringInterval time.Duration // default freshness of t (lake) behind t$rt
	TieringRows     int64         // rows a tiering round holds in memory before it encodes or sorts them
	LogRetention    time.Duration // how long log records stay after the lake holds them
	LogDiskBudget   string        // the most disk the log may use, e.g. "50GiB"; "" or "0" = unlimited
	LogMinFree      string        // free space the log leaves on its file system; "" = logstore.DefaultMinFree, "0" = none
	LogLevel        string        // debug, info, warn, error
	DebugAddr       string        // if set, serves Go's pprof handlers (and /metrics) on this address
	MetricsAddr     string        // if set, serves Prometheus metrics at /metrics on this address

	// S3 settings, used when Warehouse is s3://bucket/path. Empty: the lake falls back to
	// AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, then the AWS
	// SDK's default chain.
	S3Endpoint        string // e.g. http://127.0.0.1:7070
	S3Region          string
	S3AccessKeyID     string
	S3SecretAccessKey string        // environment only (FLIGHTD_S3_SECRET_ACCESS_KEY); never printed
	S3PathStyle       string        // "" (auto: path style when an endpoint is set), "true" or "false"
	S3RequestTimeout  time.Duration // an S3 request attempt waiting this long on the server fails and is retried; 0 = the lake's default
	S3MaxAttempts     int           // tries of an S3 request, the first included; 0 = the lake's default

	// TLS: both files set serves grpc+tls.
	TLSCert string // PEM certificate chain
	TLSKey  string // PEM private key
	// Authentication: a password (environment only, FLIGHTD_AUTH_PASSWORD)
	// turns it on for AuthUser.
	AuthUser     string
	AuthPassword string // never printed

	Limits
	LogConfig
	ClusterConfig

	// Obsolete lists the flags of earlier versions that were set: they no
	// longer do anything, and are accepted (with a warning at start) so
	// that a service definition setting them still starts.
	Obsolete []string
}

// S3Options returns the S3 options of the warehouse for this configuration.
func (c Config) S3Options() s3.Options {
	o := s3.Options{Endpoint: c.S3Endpoint, Region: c.S3Region, AccessKeyID: c.S3AccessKeyID, SecretAccessKey: c.S3SecretAccessKey,
		RequestTimeout: c.S3RequestTimeout, MaxAttempts: c.S3MaxAttempts}
	switch c.S3PathStyle {
	case "true":
		o.PathStyle = new(true)
	case "false":
		o.PathStyle = new(false)
	}
	return o
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		Listen:          "127.0.0.1:31337",
		DataDir:         "./data",
		TieringInterval: 30 * time.Second,
		TieringRows:     1 << 20,
		LogRetention:    24 * time.Hour,
		LogLevel:        "info",
		AuthUser:        "flightd",
		Limits:          defaultLimits(),
		LogConfig:       defaultLogConfig(),
		ClusterConfig:   defaultClusterConfig(),
	}
}

// validate fills derived defaults and rejects bad combinations.
func (c *Config) validate() error {
	if c.Listen == "" {
		return errors.New("--listen must not be empty")
	}
	if c.DataDir == "" {
		return errors.New("--data-dir must not be empty")
	}
	if c.Warehouse == "" {
		c.Warehouse = filepath.Join(c.DataDir, "warehouse")
	}
	if _, _, ok := s3.ParseURL(c.Warehouse); ok {
		// s3://bucket/path or s3a://bucket/path
	} else if strings.Contains(c.Warehouse, "://") && !strings.HasPrefix(c.Warehouse, "file://") {
		return fmt.Errorf("--warehouse %q: want a directory, file:///dir or s3://bucket/path", c.Warehouse)
	}
	c.Warehouse = strings.TrimPrefix(c.Warehouse, "file://")
	switch c.S3PathStyle {
	case "", "true", "false":
	default:
		return fmt.Errorf("--s3-path-style %q: want true or false (empty: path style when --s3-endpoint is set)", c.S3PathStyle)
	}
	if (c.S3AccessKeyID == "") != (c.S3SecretAccessKey == "") {
		return errors.New("--s3-access-key-id and FLIGHTD_S3_SECRET_ACCESS_KEY must be set together")
	}
	if c.S3RequestTimeout < 0 {
		return fmt.Errorf("--s3-request-timeout must not be negative, got %s", c.S3RequestTimeout)
	}
	if c.S3MaxAttempts < 0 {
		return fmt.Errorf("--s3-max-attempts must not be negative, got %d", c.S3MaxAttempts)
	}
	if c.TieringInterval <= 0 {
		return fmt.Errorf("--tiering-interval must be positive, got %s", c.TieringInterval)
	}
	if c.TieringRows <= 0 {
		return fmt.Errorf("--tiering-rows must be positive, got %d", c.TieringRows)
	}
	if _, err := parseSize(c.LogMinFree); err != nil {
		return fmt.Errorf("--log-min-free: %w", err)
	}
	if _, err := parseSize(c.LogDiskBudget); err != nil {
		return fmt.Errorf("--log-disk-budget: %w", err)
	}
	if c.LogRetention <= 0 {
		return fmt.Errorf("--log-retention must be positive, got %s", c.LogRetention)
	}
	for _, a := range []struct{ flag, addr string }{{"--debug-addr", c.DebugAddr}, {"--metrics-addr", c.MetricsAddr}} {
		if a.addr == "" {
			continue
		}
		if _, port, err := net.SplitHostPort(a.addr); err != nil || port == "" {
			return fmt.Errorf("%s %q: want host:port, e.g. 127.0.0.1:9464", a.flag, a.addr)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key must be set together")
	}
	if c.AuthPassword != "" && c.AuthUser == "" {
		return errors.New("--auth-user must not be empty when FLIGHTD_AUTH_PASSWORD is set")
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", c.LogLevel)
	}
	if err := c.LogConfig.validate(); err != nil {
		return err
	}
	if err := c.ClusterConfig.validate(c); err != nil {
		return err
	}
	return c.Limits.validate()
}

func (c Config) String() string {
	s := fmt.Sprintf("--listen=%s --data-dir=%s --warehouse=%s --tiering-interval=%s --tiering-rows=%d --log-retention=%s --log-disk-budget=%s --log-min-free=%s --log-level=%s --debug-addr=%s --metrics-addr=%s",
		c.Listen, c.DataDir, c.Warehouse, c.TieringInterval, c.TieringRows, c.LogRetention, c.LogDiskBudget, c.LogMinFree, c.LogLevel, c.DebugAddr, c.MetricsAddr)
	s += " " + c.Limits.String() + " " + c.LogConfig.String()
	if cs := c.ClusterConfig.String(); cs != "" {
		s += " " + cs
	}
	if c.TLSCert != "" {
		s += fmt.Sprintf(" --tls-cert=%s --tls-key=%s", c.TLSCert, c.TLSKey)
	}
	if c.AuthPassword != "" {
		s += fmt.Sprintf(" --auth-user=%s auth-password=(set)", c.AuthUser)
	}
	if _, _, ok := s3.ParseURL(c.Warehouse); ok {
		secret := ""
		if c.S3SecretAccessKey != "" {
			secret = "(set)"
		}
		s += fmt.Sprintf(" --s3-endpoint=%s --s3-region=%s --s3-path-style=%s --s3-access-key-id=%s s3-secret=%s --s3-request-timeout=%s --s3-max-attempts=%d",
			c.S3Endpoint, c.S3Region, c.S3PathStyle, c.S3AccessKeyID, secret, c.S3RequestTimeout, c.S3MaxAttempts)
	}
	return s
}

// parseServe reads environment variables, then flags.
func parseServe(args []string) (Config, error) {
	c := DefaultConfig()
	// Empty variables count as unset.
	env := func(name string, dst *string) {
		if v := os.Getenv(name); v != "" {
			*dst = v
		}
	}
	env("FLIGHTD_LISTEN", &c.Listen)
	env("FLIGHTD_DATA_DIR", &c.DataDir)
	env("FLIGHTD_WAREHOUSE", &c.Warehouse)
	env("FLIGHTD_LOG_LEVEL", &c.LogLevel)
	env("FLIGHTD_DEBUG_ADDR", &c.DebugAddr)
	env("FLIGHTD_METRICS_ADDR", &c.MetricsAddr)
	env("FLIGHTD_LOG_DISK_BUDGET", &c.LogDiskBudget)
	env("FLIGHTD_LOG_MIN_FREE", &c.LogMinFree)
	env("FLIGHTD_S3_ENDPOINT", &c.S3Endpoint)
	env("FLIGHTD_S3_REGION", &c.S3Region)
	env("FLIGHTD_S3_ACCESS_KEY_ID", &c.S3AccessKeyID)
	env("FLIGHTD_S3_SECRET_ACCESS_KEY", &c.S3SecretAccessKey)
	env("FLIGHTD_S3_PATH_STYLE", &c.S3PathStyle)
	env("FLIGHTD_TLS_CERT", &c.TLSCert)
	env("FLIGHTD_TLS_KEY", &c.TLSKey)
	env("FLIGHTD_AUTH_USER", &c.AuthUser)
	env("FLIGHTD_AUTH_PASSWORD", &c.AuthPassword)
	if v := os.Getenv("FLIGHTD_S3_MAX_ATTEMPTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return c, fmt.Errorf("FLIGHTD_S3_MAX_ATTEMPTS=%q: want a number", v)
		}
		c.S3MaxAttempts = n
	}
	for name, dst := range map[string]*time.Duration{
		"FLIGHTD_TIERING_INTERVAL":   &c.TieringInterval,
		"FLIGHTD_LOG_RETENTION":      &c.LogRetention,
		"FLIGHTD_S3_REQUEST_TIMEOUT": &c.S3RequestTimeout,
	} {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return c, fmt.Errorf("%s=%q: %w", name, v, err)
			}
			*dst = d
		}
	}
	if v := os.Getenv("FLIGHTD_TIERING_ROWS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return c, fmt.Errorf("FLIGHTD_TIERING_ROWS=%q: want a number of rows", v)
		}
		c.TieringRows = n
	}
	if err := c.Limits.env(); err != nil {
		return c, err
	}
	if err := c.ClusterConfig.env(); err != nil {
		return c, err
	}
	if err := c.LogConfig.env(); err != nil {
		return c, err
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.StringVar(&c.Listen, "listen", c.Listen, "address to serve Flight SQL on (env FLIGHTD_LISTEN)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for flightd's state (env FLIGHTD_DATA_DIR)")
	fs.StringVar(&c.Warehouse, "warehouse", c.Warehouse, "Paimon warehouse: a directory or s3://bucket/path, default <data-dir>/warehouse (env FLIGHTD_WAREHOUSE)")
	fs.StringVar(&c.S3Endpoint, "s3-endpoint", c.S3Endpoint, "S3 endpoint URL for an s3:// warehouse, e.g. http://127.0.0.1:7070; empty: AWS (env FLIGHTD_S3_ENDPOINT, then AWS_ENDPOINT_URL)")
	fs.StringVar(&c.S3Region, "s3-region", c.S3Region, "S3 region (env FLIGHTD_S3_REGION, then AWS_REGION; default us-east-1)")
	fs.StringVar(&c.S3AccessKeyID, "s3-access-key-id", c.S3AccessKeyID, "S3 access key id; the secret comes from FLIGHTD_S3_SECRET_ACCESS_KEY (env FLIGHTD_S3_ACCESS_KEY_ID, then AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, then the AWS default chain)")
	fs.StringVar(&c.S3PathStyle, "s3-path-style", c.S3PathStyle, "true or false; empty: path-style addressing when --s3-endpoint is set (env FLIGHTD_S3_PATH_STYLE)")
	fs.DurationVar(&c.S3RequestTimeout, "s3-request-timeout", c.S3RequestTimeout, "an S3 request attempt that waits this long on the server (to connect, for headers, within a read of the body; not a whole transfer that keeps moving) fails and is retried; 0 = 30s (env FLIGHTD_S3_REQUEST_TIMEOUT)")
	fs.IntVar(&c.S3MaxAttempts, "s3-max-attempts", c.S3MaxAttempts, "tries of an S3 request, the first included, with backoff, on throttling, 5xx, connection errors and stalls; 0 = AWS_MAX_ATTEMPTS, else 4 (env FLIGHTD_S3_MAX_ATTEMPTS)")
	fs.DurationVar(&c.TieringInterval, "tiering-interval", c.TieringInterval, "how often log records are committed to the lake (env FLIGHTD_TIERING_INTERVAL)")
	fs.Int64Var(&c.TieringRows, "tiering-rows", c.TieringRows, "rows a tiering round holds in memory: an append table's become data files every this many, a primary-key table's are sorted into runs every third of this many (merged into a file per bucket at the commit) (env FLIGHTD_TIERING_ROWS)")
	fs.DurationVar(&c.LogRetention, "log-retention", c.LogRetention, "how long log records stay after the lake holds them (env FLIGHTD_LOG_RETENTION)")
	fs.StringVar(&c.LogDiskBudget, "log-disk-budget", c.LogDiskBudget, "the most disk the log may use, e.g. 50GiB; writes past it are rejected (env FLIGHTD_LOG_DISK_BUDGET; default unlimited)")
	fs.StringVar(&c.LogMinFree, "log-min-free", c.LogMinFree, "free space the log leaves on its file system: writes that would leave less are rejected with RESOURCE_EXHAUSTED until space returns; 0 = none (env FLIGHTD_LOG_MIN_FREE; default 128MiB)")
	fs.StringVar(&c.DebugAddr, "debug-addr", c.DebugAddr, "serve Go's /debug/pprof and /metrics on this address, e.g. 127.0.0.1:6060 (env FLIGHTD_DEBUG_ADDR)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", c.MetricsAddr, "serve Prometheus metrics at /metrics on this address, e.g. 127.0.0.1:9464 (env FLIGHTD_METRICS_ADDR; default off)")
	fs.StringVar(&c.TLSCert, "tls-cert", c.TLSCert, "PEM certificate (chain) to serve grpc+tls with; needs --tls-key (env FLIGHTD_TLS_CERT)")
	fs.StringVar(&c.TLSKey, "tls-key", c.TLSKey, "PEM private key of --tls-cert (env FLIGHTD_TLS_KEY)")
	fs.StringVar(&c.AuthUser, "auth-user", c.AuthUser, "the user name clients authenticate as; authentication is on when FLIGHTD_AUTH_PASSWORD is set (env FLIGHTD_AUTH_USER)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error (env FLIGHTD_LOG_LEVEL)")
	c.Limits.flags(fs)
	c.LogConfig.flags(fs)
	c.ClusterConfig.flags(fs)
	for _, name := range []string{"max-pending-results", "result-ttl"} {
		fs.Func(name, "no longer used: an update's ticket carries its row count, nothing waits for its DoGet", func(string) error {
			c.Obsolete = append(c.Obsolete, "--"+name)
			return nil
		})
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("serve: unexpected argument %q", fs.Arg(0))
	}
	userSet := os.Getenv("FLIGHTD_AUTH_USER") != ""
	fs.Visit(func(f *flag.Flag) { userSet = userSet || f.Name == "auth-user" })
	if userSet && c.AuthPassword == "" {
		return c, errors.New("--auth-user is set but FLIGHTD_AUTH_PASSWORD is not: authentication would be off; set the password in the environment")
	}
	return c, c.validate()
}

// parseSize reads a byte size: a plain number of bytes, or a number with a
// unit KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
// "" means 0.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (try 500MiB or 50GiB)", s)
	}
	return int64(n * float64(mult)), nil
}
