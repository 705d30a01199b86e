package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/flightd/flightd/logstore"
	"github.com/flightd/flightd/logstore/kafkalog"
)

// LogConfig says where the log of un-tiered writes lives: the embedded
// Badger store under the data directory (the default), or Apache Kafka.
type LogConfig struct {
	Log               string        // "badger" (default) or kafka://host:port[,host:port...]
	KafkaTopicPrefix  string        // topics and transactional id start with it
	KafkaTLS          bool          // connect to the brokers over TLS
	KafkaTLSCA        string        // PEM CA bundle to verify the brokers with; "": the system's
	KafkaTLSCert      string        // PEM client certificate (mutual TLS); needs KafkaTLSKey
	KafkaTLSKey       string        // PEM key of KafkaTLSCert
	KafkaSASL         string        // "", plain, scram-sha-256 or scram-sha-512
	KafkaSASLUser     string        // the SASL user
	KafkaSASLPassword string        // environment only (FLIGHTD_KAFKA_SASL_PASSWORD); never printed
	KafkaReplication  int           // replication factor of the topics flightd creates; 0: the brokers' default
	KafkaTimeout      time.Duration // a write the brokers do not take within it fails with UNAVAILABLE
}

func defaultLogConfig() LogConfig {
	return LogConfig{Log: "badger", KafkaTopicPrefix: "flightd.", KafkaTimeout: 15 * time.Second}
}

// brokers returns the brokers of a kafka:// log, nil for badger.
func (c LogConfig) brokers() []string {
	rest, ok := strings.CutPrefix(c.Log, "kafka://")
	if !ok {
		return nil
	}
	var out []string
	for _, b := range strings.Split(strings.TrimSuffix(rest, "/"), ",") {
		if b = strings.TrimSpace(b); b != "" {
			out = append(out, b)
		}
	}
	return out
}

func (c *LogConfig) env() error {
	for name, dst := range map[string]*string{
		"FLIGHTD_LOG":                 &c.Log,
		"FLIGHTD_KAFKA_TOPIC_PREFIX":  &c.KafkaTopicPrefix,
		"FLIGHTD_KAFKA_TLS_CA":        &c.KafkaTLSCA,
		"FLIGHTD_KAFKA_TLS_CERT":      &c.KafkaTLSCert,
		"FLIGHTD_KAFKA_TLS_KEY":       &c.KafkaTLSKey,
		"FLIGHTD_KAFKA_SASL":          &c.KafkaSASL,
		"FLIGHTD_KAFKA_SASL_USER":     &c.KafkaSASLUser,
		"FLIGHTD_KAFKA_SASL_PASSWORD": &c.KafkaSASLPassword,
	} {
		if v := os.Getenv(name); v != "" {
			*dst = v
		}
	}
	if v := os.Getenv("FLIGHTD_KAFKA_TLS"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("FLIGHTD_KAFKA_TLS=%q: want true or false", v)
		}
		c.KafkaTLS = b
	}
	if v := os.Getenv("FLIGHTD_KAFKA_REPLICATION"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("FLIGHTD_KAFKA_REPLICATION=%q: want a number", v)
		}
		c.KafkaReplication = n
	}
	if v := os.Getenv("FLIGHTD_KAFKA_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("FLIGHTD_KAFKA_TIMEOUT=%q: %w", v, err)
		}
		c.KafkaTimeout = d
	}
	return nil
}

func (c *LogConfig) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Log, "log", c.Log, "where acknowledged, un-tiered writes live: badger (embedded, under --data-dir) or kafka://host:port[,host:port] (env FLIGHTD_LOG)")
	fs.StringVar(&c.KafkaTopicPrefix, "kafka-topic-prefix", c.KafkaTopicPrefix, "prefix of the topics (one per table) and of the transactional id flightd uses in Kafka; warehouses sharing brokers need different prefixes (env FLIGHTD_KAFKA_TOPIC_PREFIX)")
	fs.BoolVar(&c.KafkaTLS, "kafka-tls", c.KafkaTLS, "connect to the Kafka brokers over TLS (env FLIGHTD_KAFKA_TLS)")
	fs.StringVar(&c.KafkaTLSCA, "kafka-tls-ca", c.KafkaTLSCA, "PEM CA bundle that signs the brokers' certificates; default the system's (env FLIGHTD_KAFKA_TLS_CA)")
	fs.StringVar(&c.KafkaTLSCert, "kafka-tls-cert", c.KafkaTLSCert, "PEM client certificate for brokers that require one; needs --kafka-tls-key (env FLIGHTD_KAFKA_TLS_CERT)")
	fs.StringVar(&c.KafkaTLSKey, "kafka-tls-key", c.KafkaTLSKey, "PEM private key of --kafka-tls-cert (env FLIGHTD_KAFKA_TLS_KEY)")
	fs.StringVar(&c.KafkaSASL, "kafka-sasl", c.KafkaSASL, "SASL mechanism: plain, scram-sha-256 or scram-sha-512; the password comes from FLIGHTD_KAFKA_SASL_PASSWORD (env FLIGHTD_KAFKA_SASL)")
	fs.StringVar(&c.KafkaSASLUser, "kafka-sasl-user", c.KafkaSASLUser, "SASL user (env FLIGHTD_KAFKA_SASL_USER)")
	fs.IntVar(&c.KafkaReplication, "kafka-replication", c.KafkaReplication, "replication factor of the topics flightd creates; 0 = the brokers' default.replication.factor (env FLIGHTD_KAFKA_REPLICATION)")
	fs.DurationVar(&c.KafkaTimeout, "kafka-timeout", c.KafkaTimeout, "a write the Kafka brokers do not take within this fails with UNAVAILABLE, naming them (env FLIGHTD_KAFKA_TIMEOUT)")
}

func (c LogConfig) validate() error {
	switch {
	case c.Log == "badger":
	case strings.HasPrefix(c.Log, "kafka://"):
		bs := c.brokers()
		if len(bs) == 0 {
			return fmt.Errorf("--log %q: name at least one broker, kafka://host:port[,host:port]", c.Log)
		}
		for _, b := range bs {
			if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
				return fmt.Errorf("--log %q: broker %q: want host:port", c.Log, b)
			}
		}
	default:
		return fmt.Errorf("--log %q: want badger or kafka://host:port[,host:port]", c.Log)
	}
	if c.KafkaTopicPrefix == "" || strings.ContainsFunc(c.KafkaTopicPrefix, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) || len(c.KafkaTopicPrefix) > 100 {
		return fmt.Errorf("--kafka-topic-prefix %q: want 1 to 100 of [A-Za-z0-9._-]", c.KafkaTopicPrefix)
	}
	if (c.KafkaTLSCert == "") != (c.KafkaTLSKey == "") {
		return errors.New("--kafka-tls-cert and --kafka-tls-key must be set together")
	}
	switch c.KafkaSASL {
	case "":
	case "plain", "scram-sha-256", "scram-sha-512":
		if c.KafkaSASLUser == "" || c.KafkaSASLPassword == "" {
			return fmt.Errorf("--kafka-sasl %s needs --kafka-sasl-user and FLIGHTD_KAFKA_SASL_PASSWORD", c.KafkaSASL)
		}
	default:
		return fmt.Errorf("--kafka-sasl %q: want plain, scram-sha-256 or scram-sha-512", c.KafkaSASL)
	}
	if c.KafkaReplication < 0 || c.KafkaReplication > 32767 {
		return fmt.Errorf("--kafka-replication %d: want 0 (the brokers' default) or a replication factor", c.KafkaReplication)
	}
	if c.KafkaTimeout <= 0 {
		return fmt.Errorf("--kafka-timeout must be positive, got %s", c.KafkaTimeout)
	}
	return nil
}

func (c LogConfig) String() string {
	if c.Log == "badger" {
		return "--log=badger"
	}
	s := fmt.Sprintf("--log=%s --kafka-topic-prefix=%s --kafka-tls=%t --kafka-replication=%d --kafka-timeout=%s", c.Log, c.KafkaTopicPrefix, c.KafkaTLS, c.KafkaReplication, c.KafkaTimeout)
	if c.KafkaSASL != "" {
		s += fmt.Sprintf(" --kafka-sasl=%s --kafka-sasl-user=%s sasl-password=(set)", c.KafkaSASL, c.KafkaSASLUser)
	}
	return s
}

// kafkaOptions builds the Kafka log's options.
func (c LogConfig) kafkaOptions(lg *slog.Logger) (kafkalog.Options, error) {
	o := kafkalog.Options{
		Brokers: c.brokers(), TopicPrefix: c.KafkaTopicPrefix, ReplicationFactor: int16(c.KafkaReplication),
		Timeout: c.KafkaTimeout, Logger: lg,
	}
	if c.KafkaTLS || c.KafkaTLSCA != "" || c.KafkaTLSCert != "" {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.KafkaTLSCA != "" {
			pem, err := os.ReadFile(c.KafkaTLSCA)
			if err != nil {
				return o, fmt.Errorf("--kafka-tls-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return o, fmt.Errorf("--kafka-tls-ca %s: no PEM certificate in it", c.KafkaTLSCA)
			}
			cfg.RootCAs = pool
		}
		if c.KafkaTLSCert != "" {
			cert, err := tls.LoadX509KeyPair(c.KafkaTLSCert, c.KafkaTLSKey)
			if err != nil {
				return o, fmt.Errorf("--kafka-tls-cert %s / --kafka-tls-key %s: %w", c.KafkaTLSCert, c.KafkaTLSKey, err)
			}
			cfg.Certificates = []tls.Certificate{cert}
		}
		o.TLS = cfg
	}
	var m sasl.Mechanism
	switch c.KafkaSASL {
	case "plain":
		m = plain.Auth{User: c.KafkaSASLUser, Pass: c.KafkaSASLPassword}.AsMechanism()
	case "scram-sha-256":
		m = scram.Auth{User: c.KafkaSASLUser, Pass: c.KafkaSASLPassword}.AsSha256Mechanism()
	case "scram-sha-512":
		m = scram.Auth{User: c.KafkaSASLUser, Pass: c.KafkaSASLPassword}.AsSha512Mechanism()
	}
	o.SASL = m
	return o, nil
}

// openLog opens the configured log. tableInfo names a table id's topic
// (the Kafka log); it may be called only once lakestream is up. With
// background, a Kafka log whose brokers cannot be reached is returned
// anyway and keeps trying (the server serves the lake meanwhile).
func openLog(ctx context.Context, cfg Config, lg *slog.Logger, tableInfo func(string) (string, string, int), background bool) (logstore.Log, error) {
	if cfg.Log == "badger" {
		logDir := filepath.Join(cfg.DataDir, "log")
		lopts := logstore.DefaultOptions()
		lopts.DiskBudget, _ = parseSize(cfg.LogDiskBudget) // validated
		if cfg.LogMinFree != "" {
			if lopts.MinFree, _ = parseSize(cfg.LogMinFree); lopts.MinFree == 0 { // validated
				lopts.MinFree = -1 // none
			}
		}
		lopts.Logger = lg.With("component", "logstore")
		l, err := logstore.Open(logDir, lopts)
		if err != nil {
			return nil, fmt.Errorf("open log %s: %w", logDir, err)
		}
		return l, nil
	}
	o, err := cfg.kafkaOptions(lg.With("component", "kafkalog"))
	if err != nil {
		return nil, err
	}
	o.TableInfo = tableInfo
	o.RecoverInBackground = background
	if cfg.NodeID != "" {
		o.NodeID, o.Shared = cfg.NodeID, true
	}
	l, err := kafkalog.Open(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", cfg.Log, err)
	}
	return l, nil
}
