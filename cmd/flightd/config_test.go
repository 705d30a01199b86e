package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseServe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    Config
		wantErr string
	}{
		{
			name: "defaults",
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd"},
		},
		{
			name: "env then flags",
			env:  map[string]string{"FLIGHTD_LISTEN": "127.0.0.1:1", "FLIGHTD_DATA_DIR": "/d", "FLIGHTD_TIERING_INTERVAL": "2s", "FLIGHTD_LOG_RETENTION": "1h", "FLIGHTD_TIERING_ROWS": "7"},
			args: []string{"--listen", "127.0.0.1:2", "--tiering-rows", "5000"},
			want: Config{Listen: "127.0.0.1:2", DataDir: "/d", Warehouse: "/d/warehouse", TieringInterval: 2 * time.Second, TieringRows: 5000, LogRetention: time.Hour, LogLevel: "info", AuthUser: "flightd"},
		},
		{name: "node id without kafka", args: []string{"--node-id", "n1"}, wantErr: "--node-id n1 needs --log kafka://"},
		{name: "bad node id", args: []string{"--node-id", "n 1", "--log", "kafka://b:9092"}, wantErr: "--node-id \"n 1\": want 1 to 64 of [A-Za-z0-9._-]"},
		{name: "advertise without node id", args: []string{"--advertise-address", "grpc://h:1"}, wantErr: "--advertise-address needs --node-id"},
		{name: "bad advertise", args: []string{"--node-id", "n1", "--log", "kafka://b:9092", "--advertise-address", "h:1"}, wantErr: "want grpc://host:port"},
		{name: "short session", args: []string{"--node-id", "n1", "--log", "kafka://b:9092", "--cluster-session-timeout", "1s"}, wantErr: "want 6s to 5m"},
		{
			name: "node", args: []string{"--node-id", "n1", "--log", "kafka://b:9092", "--advertise-address", "grpc+tls://db1.example:31337"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				LogConfig:     LogConfig{Log: "kafka://b:9092", KafkaTopicPrefix: "flightd.", KafkaTimeout: 15 * time.Second},
				ClusterConfig: ClusterConfig{NodeID: "n1", Advertise: "grpc+tls://db1.example:31337", SessionTimeout: 10 * time.Second}},
		},
		{name: "bad interval env", env: map[string]string{"FLIGHTD_TIERING_INTERVAL": "soon"}, wantErr: "FLIGHTD_TIERING_INTERVAL"},
		{name: "zero interval", args: []string{"--tiering-interval", "0s"}, wantErr: "must be positive"},
		{name: "bad rows env", env: map[string]string{"FLIGHTD_TIERING_ROWS": "many"}, wantErr: "FLIGHTD_TIERING_ROWS"},
		{name: "zero rows", args: []string{"--tiering-rows", "0"}, wantErr: "--tiering-rows must be positive"},
		{
			name: "s3 warehouse",
			env:  map[string]string{"FLIGHTD_S3_SECRET_ACCESS_KEY": "sk"},
			args: []string{"--warehouse", "s3://b/p", "--s3-endpoint", "http://127.0.0.1:7070", "--s3-access-key-id", "ak", "--s3-path-style", "true"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "s3://b/p", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				S3Endpoint: "http://127.0.0.1:7070", S3AccessKeyID: "ak", S3SecretAccessKey: "sk", S3PathStyle: "true"},
		},
		{
			name: "s3 deadlines",
			env:  map[string]string{"FLIGHTD_S3_MAX_ATTEMPTS": "2"},
			args: []string{"--warehouse", "s3://b/p", "--s3-request-timeout", "5s"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "s3://b/p", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				S3RequestTimeout: 5 * time.Second, S3MaxAttempts: 2},
		},
		{name: "negative s3 timeout", args: []string{"--s3-request-timeout", "-1s"}, wantErr: "--s3-request-timeout"},
		{name: "bad s3 attempts env", env: map[string]string{"FLIGHTD_S3_MAX_ATTEMPTS": "lots"}, wantErr: "FLIGHTD_S3_MAX_ATTEMPTS"},
		{
			name: "admission",
			env:  map[string]string{"FLIGHTD_QUEUE_TIMEOUT": "5s"},
			args: []string{"--max-queued", "7", "--stall-timeout", "0"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				Limits: func() Limits {
					l := defaultLimits()
					l.MaxQueued, l.QueueTimeout, l.StallTimeout = 7, 5*time.Second, 0
					return l
				}()},
		},
		{name: "no queue", args: []string{"--max-queued", "0"}, wantErr: "--max-queued must be positive"},
		{name: "no queue wait", args: []string{"--queue-timeout", "0s"}, wantErr: "--queue-timeout must be positive"},
		{name: "other scheme", args: []string{"--warehouse", "gs://b/p"}, wantErr: "s3://bucket/path"},
		{name: "bad path style", args: []string{"--warehouse", "s3://b/p", "--s3-path-style", "yes"}, wantErr: "--s3-path-style"},
		{name: "key without secret", args: []string{"--warehouse", "s3://b/p", "--s3-access-key-id", "ak"}, wantErr: "FLIGHTD_S3_SECRET_ACCESS_KEY"},
		{name: "bad budget", args: []string{"--log-disk-budget", "lots"}, wantErr: "--log-disk-budget"},
		{name: "bad free floor", env: map[string]string{"FLIGHTD_LOG_MIN_FREE": "plenty"}, wantErr: "--log-min-free"},
		{name: "bad level", args: []string{"--log-level", "loud"}, wantErr: "--log-level"},
		{
			name: "metrics and debug addresses",
			env:  map[string]string{"FLIGHTD_METRICS_ADDR": "127.0.0.1:9464"},
			args: []string{"--debug-addr", "127.0.0.1:6060"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				DebugAddr: "127.0.0.1:6060", MetricsAddr: "127.0.0.1:9464"},
		},
		{name: "metrics address without port", args: []string{"--metrics-addr", "9464"}, wantErr: "--metrics-addr"},
		{name: "debug address without port", args: []string{"--debug-addr", "localhost"}, wantErr: "--debug-addr"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected argument"},
		{
			name: "tls and authentication",
			env:  map[string]string{"FLIGHTD_AUTH_PASSWORD": "pw", "FLIGHTD_TLS_KEY": "k.pem"},
			args: []string{"--tls-cert", "c.pem", "--auth-user", "alice"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info",
				TLSCert: "c.pem", TLSKey: "k.pem", AuthUser: "alice", AuthPassword: "pw"},
		},
		{name: "user without password", args: []string{"--auth-user", "alice"}, wantErr: "FLIGHTD_AUTH_PASSWORD is not"},
		{name: "certificate without key", args: []string{"--tls-cert", "c.pem"}, wantErr: "--tls-cert and --tls-key must be set together"},
		{
			name: "limits",
			env:  map[string]string{"FLIGHTD_QUERY_TIMEOUT": "1m", "FLIGHTD_MAX_PREPARED": "9"},
			args: []string{"--memory-limit", "2GiB", "--max-concurrent-queries", "3", "--query-timeout", "0", "--max-statement-bytes", "4KiB"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				Limits: func() Limits {
					l := defaultLimits()
					l.MemoryLimit, l.MaxConcurrentQueries, l.QueryTimeout, l.MaxPrepared, l.MaxStatementBytes = "2GiB", 3, 0, 9, "4KiB"
					return l
				}()},
		},
		{name: "memory limit too small", args: []string{"--memory-limit", "1MiB"}, wantErr: "--memory-limit"},
		{name: "memory limit percentage", args: []string{"--memory-limit", "150%"}, wantErr: "--memory-limit"},
		{name: "no concurrency", args: []string{"--max-concurrent-queries", "0"}, wantErr: "--max-concurrent-queries must be positive"},
		{name: "negative timeout", args: []string{"--query-timeout", "-1s"}, wantErr: "--query-timeout"},
		{name: "tiny message", args: []string{"--max-message-bytes", "1KiB"}, wantErr: "--max-message-bytes"},
		{name: "tiny result batch", args: []string{"--max-result-batch-bytes", "1KiB"}, wantErr: "--max-result-batch-bytes"},
		{
			name: "result batch", env: map[string]string{"FLIGHTD_MAX_RESULT_BATCH_BYTES": "8MiB"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				Limits: func() Limits { l := defaultLimits(); l.MaxResultBatchBytes = "8MiB"; return l }()},
		},
		{
			name: "obsolete flags are accepted and reported", args: []string{"--result-ttl", "5m", "--max-pending-results", "10"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				Obsolete: []string{"--result-ttl", "--max-pending-results"}},
		},
		{name: "password without user", env: map[string]string{"FLIGHTD_AUTH_PASSWORD": "pw"}, args: []string{"--auth-user", ""}, wantErr: "--auth-user must not be empty"},
		{
			name: "kafka log", env: map[string]string{"FLIGHTD_KAFKA_SASL_PASSWORD": "pw", "FLIGHTD_KAFKA_REPLICATION": "3"},
			args: []string{"--log", "kafka://b1:9092, b2:9093", "--kafka-topic-prefix", "wh1.", "--kafka-sasl", "scram-sha-512", "--kafka-sasl-user", "fd", "--kafka-tls"},
			want: Config{Listen: "127.0.0.1:31337", DataDir: "./data", Warehouse: "data/warehouse", TieringInterval: 30 * time.Second, TieringRows: 1 << 20, LogRetention: 24 * time.Hour, LogLevel: "info", AuthUser: "flightd",
				LogConfig: LogConfig{Log: "kafka://b1:9092, b2:9093", KafkaTopicPrefix: "wh1.", KafkaTLS: true, KafkaSASL: "scram-sha-512", KafkaSASLUser: "fd", KafkaSASLPassword: "pw", KafkaReplication: 3, KafkaTimeout: 15 * time.Second}},
		},
		{name: "unknown log", args: []string{"--log", "pulsar://x:1"}, wantErr: "want badger or kafka://"},
		{name: "kafka without brokers", args: []string{"--log", "kafka://"}, wantErr: "name at least one broker"},
		{name: "kafka broker without port", args: []string{"--log", "kafka://b1"}, wantErr: `broker "b1": want host:port`},
		{name: "bad topic prefix", args: []string{"--log", "kafka://b:1", "--kafka-topic-prefix", "a/b"}, wantErr: "--kafka-topic-prefix"},
		{name: "sasl without password", args: []string{"--log", "kafka://b:1", "--kafka-sasl", "plain", "--kafka-sasl-user", "u"}, wantErr: "FLIGHTD_KAFKA_SASL_PASSWORD"},
		{name: "unknown sasl", args: []string{"--kafka-sasl", "kerberos"}, wantErr: "--kafka-sasl"},
		{name: "client cert without key", args: []string{"--kafka-tls-cert", "c.pem"}, wantErr: "--kafka-tls-key"},
		{name: "zero kafka timeout", args: []string{"--kafka-timeout", "0s"}, wantErr: "--kafka-timeout must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"FLIGHTD_LISTEN", "FLIGHTD_DATA_DIR", "FLIGHTD_WAREHOUSE", "FLIGHTD_TIERING_INTERVAL", "FLIGHTD_TIERING_ROWS", "FLIGHTD_LOG_RETENTION", "FLIGHTD_LOG_LEVEL", "FLIGHTD_LOG_DISK_BUDGET", "FLIGHTD_LOG_MIN_FREE", "FLIGHTD_DEBUG_ADDR", "FLIGHTD_METRICS_ADDR", "FLIGHTD_S3_ENDPOINT", "FLIGHTD_S3_REGION", "FLIGHTD_S3_ACCESS_KEY_ID", "FLIGHTD_S3_SECRET_ACCESS_KEY", "FLIGHTD_S3_PATH_STYLE", "FLIGHTD_S3_REQUEST_TIMEOUT", "FLIGHTD_S3_MAX_ATTEMPTS", "FLIGHTD_TLS_CERT", "FLIGHTD_TLS_KEY", "FLIGHTD_AUTH_USER", "FLIGHTD_AUTH_PASSWORD",
				"FLIGHTD_MEMORY_LIMIT", "FLIGHTD_QUERY_TIMEOUT", "FLIGHTD_MAX_CONCURRENT_QUERIES", "FLIGHTD_MAX_PREPARED", "FLIGHTD_PREPARED_IDLE_TIMEOUT", "FLIGHTD_MAX_STATEMENT_BYTES", "FLIGHTD_MAX_MESSAGE_BYTES", "FLIGHTD_MAX_RESULT_BATCH_BYTES", "FLIGHTD_SHUTDOWN_GRACE", "FLIGHTD_MAX_QUEUED", "FLIGHTD_QUEUE_TIMEOUT", "FLIGHTD_STALL_TIMEOUT",
				"FLIGHTD_LOG", "FLIGHTD_KAFKA_TOPIC_PREFIX", "FLIGHTD_KAFKA_TLS", "FLIGHTD_KAFKA_TLS_CA", "FLIGHTD_KAFKA_TLS_CERT", "FLIGHTD_KAFKA_TLS_KEY", "FLIGHTD_KAFKA_SASL", "FLIGHTD_KAFKA_SASL_USER", "FLIGHTD_KAFKA_SASL_PASSWORD", "FLIGHTD_KAFKA_REPLICATION", "FLIGHTD_KAFKA_TIMEOUT"} {
				t.Setenv(k, "")
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			got, err := parseServe(tc.args)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			if tc.want.Limits == (Limits{}) {
				tc.want.Limits = defaultLimits()
			}
			if tc.want.LogConfig == (LogConfig{}) {
				tc.want.LogConfig = defaultLogConfig()
			}
			if tc.want.ClusterConfig == (ClusterConfig{}) {
				tc.want.ClusterConfig = defaultClusterConfig()
			}
			require.Equal(t, tc.want, got)
			if got.AuthPassword != "" {
				require.NotContains(t, got.String(), got.AuthPassword, "the password is never printed")
			}
			if got.KafkaSASLPassword != "" {
				require.NotContains(t, got.String(), got.KafkaSASLPassword, "the SASL password is never printed")
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "0": 0, "1024": 1024, "1KiB": 1024, "1.5GiB": 3 << 29, "2GB": 2e9, "10 MiB": 10 << 20} {
		got, err := parseSize(in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	_, err := parseSize("-1GiB")
	require.Error(t, err)
}

func TestMemoryLimit(t *testing.T) {
	total, of := systemMemory()
	require.Positive(t, total, of)
	n, from, err := Limits{MemoryLimit: "50%"}.memoryLimit()
	require.NoError(t, err)
	require.InDelta(t, total/2, n, 1)
	require.Contains(t, from, "50% of ")
	n, _, err = Limits{MemoryLimit: "3GiB"}.memoryLimit()
	require.NoError(t, err)
	require.EqualValues(t, 3<<30, n)
	require.Equal(t, "3072MiB", duckDBSize(n))
}

// TestMemoryCeiling: halfway from the memory limit to all the memory the
// process can have, unless --memory-ceiling says.
func TestMemoryCeiling(t *testing.T) {
	total, _ := systemMemory()
	c, err := Limits{MemoryLimit: "50%"}.memoryCeiling()
	require.NoError(t, err)
	require.InDelta(t, total/2+total/4, c, 2)
	c, err = Limits{MemoryLimit: "50%", MemoryCeiling: "2GiB"}.memoryCeiling()
	require.NoError(t, err)
	require.EqualValues(t, 2<<30, c)
	_, err = Limits{MemoryLimit: "50%", MemoryCeiling: "1KiB"}.memoryCeiling()
	require.ErrorContains(t, err, "--memory-ceiling")
}

func TestTakeFlag(t *testing.T) {
	v, rest := takeFlag([]string{"--data-dir", "d", "--to", "kafka://b:1", "-x"}, "to")
	require.Equal(t, "kafka://b:1", v)
	require.Equal(t, []string{"--data-dir", "d", "-x"}, rest)
	v, rest = takeFlag([]string{"-to=badger", "--to-kafka-topic-prefix=p."}, "to")
	require.Equal(t, "badger", v)
	require.Equal(t, []string{"--to-kafka-topic-prefix=p."}, rest)
	v, rest = takeFlag(rest, "to-kafka-topic-prefix")
	require.Equal(t, "p.", v)
	require.Empty(t, rest)
}
