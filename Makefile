# flightd — see README.md. `make run` starts the server, `make test` installs
# what the tests need and runs them all.

GO          ?= go
TAGS        := duckdb_arrow
BIN         := bin/flightd
VENV        := .venv
PY          := $(VENV)/bin/python
PVENV       := .venv-paimon
PAIMON_PY   := $(CURDIR)/$(PVENV)/bin/python
GOTESTFLAGS ?=
# Versity S3 Gateway: the real S3 server of the S3 tests (lake/fileio/s3, lake, integration).
TOOLS             := $(CURDIR)/bin/tools
VERSITYGW_VERSION := v1.8.0
VERSITYGW         := $(TOOLS)/versitygw
VERSITYGW_STAMP   := $(TOOLS)/.versitygw-$(VERSITYGW_VERSION)
# staticcheck, run by make lint (part of make test).
STATICCHECK_VERSION := v0.8.2
STATICCHECK         := $(TOOLS)/staticcheck
STATICCHECK_STAMP   := $(TOOLS)/.staticcheck-$(STATICCHECK_VERSION)
# Chromium from Debian's packages: the headless browser that drives the
# operator's page in integration/console_test.go (chromedp), installed once
# when it is missing (FLIGHTD_REQUIRE_BROWSER makes the test fail without it).
CHROMIUM_STAMP := $(TOOLS)/.chromium
SUDO           := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Java Paimon (paimon-bundle from Maven Central) for the cross-check in integration/java_test.go.
PAIMON_CHECK_JAR  := integration/java/target/paimon-check.jar
JDBC_CHECK_JAR    := integration/jdbc/target/jdbc-check.jar
# Apache Kafka (kafka_2.13 and its runtime jars from Maven Central), the real
# broker that internal/testkafka starts for tests, through FLIGHTD_KAFKA_LIB.
KAFKA_LIB          := $(CURDIR)/integration/kafka/target/lib
KAFKA_BROKER_STAMP := integration/kafka/target/.kafka-broker
# Packages that never link DuckDB: fast to build, run with the race detector.
NOCGO_PKGS   = $(shell $(GO) list ./... | grep -v -e '/query$$' -e /cmd/ -e /integration -e /bench -e /internal/deps)

.PHONY: FORCE browser jars lint test-lane1 test-lane2 bench-cluster bench-kafka bench-load all build run cluster tools paimon-check-jar jdbc-check-jar kafka-broker test test-kafka-cluster test-paimon test-go test-nocgo test-engine test-integration test-python test-fuzz fuzz deps py-deps go-deps bench bench-quick bench-read bench-stream bench-sustained soak clean

all: build

build: go-deps
	$(GO) build -tags $(TAGS) -o $(BIN) ./cmd/flightd

run: build
	./$(BIN) serve

# Three flightd nodes (127.0.0.1:31337-31339) over one Kafka broker and one
# Versity S3 Gateway on this machine, state under ./data/cluster; Ctrl-C
# stops them all. Settings (CLUSTER_FLAGS, FRESH=1, ports): scripts/cluster.sh;
# the cluster: docs/cluster.md.
cluster: build kafka-broker tools
	exec env FLIGHTD_BIN=$(CURDIR)/$(BIN) VERSITYGW=$(VERSITYGW) KAFKA_LIB=$(KAFKA_LIB) scripts/cluster.sh

go-deps:
	$(GO) mod download

py-deps: $(VENV)/.installed $(PVENV)/.installed

$(VENV)/.installed: requirements-test.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements-test.txt
	touch $@

$(PVENV)/.installed: requirements-paimon.txt
	python3 -m venv $(PVENV)
	$(PVENV)/bin/pip install --quiet --upgrade pip
	$(PVENV)/bin/pip install --quiet -r requirements-paimon.txt
	touch $@

deps: go-deps py-deps tools jars

# The Maven builds one after another: Maven 3.8 does not lock its local
# repository against another Maven process downloading the same artifact.
jars:
	$(MAKE) paimon-check-jar
	$(MAKE) jdbc-check-jar
	$(MAKE) kafka-broker

paimon-check-jar: $(PAIMON_CHECK_JAR)

# The Arrow Flight SQL JDBC driver and a client that drives flightd through it (integration/jdbc_test.go).
jdbc-check-jar: $(JDBC_CHECK_JAR)

$(JDBC_CHECK_JAR): integration/jdbc/pom.xml $(shell find integration/jdbc/src -name '*.java')
	cd integration/jdbc && mvn -q -B -DskipTests package
	@test -f $@ && touch $@

$(PAIMON_CHECK_JAR): integration/java/pom.xml $(shell find integration/java/src -name '*.java')
	cd integration/java && mvn -q -B -DskipTests package
	@test -f $@ && touch $@

# The Kafka broker's classpath, copied again only when the pom changes.
kafka-broker: $(KAFKA_BROKER_STAMP)

$(KAFKA_BROKER_STAMP): integration/kafka/pom.xml
	rm -rf $(KAFKA_LIB)
	cd integration/kafka && mvn -q -B package
	@ls $(KAFKA_LIB)/kafka_2.13-*.jar >/dev/null && touch $@

# Test tools, built once per version (go install of a pinned version leaves go.mod alone),
# and the browser.
tools: $(VERSITYGW_STAMP) $(STATICCHECK_STAMP) $(CHROMIUM_STAMP)

browser: $(CHROMIUM_STAMP)

# The stamp is made again when the browser went missing since.
ifeq ($(shell command -v chromium 2>/dev/null),)
$(CHROMIUM_STAMP): FORCE
endif
$(CHROMIUM_STAMP):
	mkdir -p $(TOOLS)
	command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -q && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q chromium; }
	touch $@

$(VERSITYGW_STAMP):
	mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)
	touch $@

$(STATICCHECK_STAMP):
	mkdir -p $(TOOLS)
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	touch $@

# Downloads and builds run side by side; then two lanes of about the same
# length, each one target after another: the tests through the real binary
# and the fuzz targets (test-lane1), the packages' own tests and lint
# (test-lane2). Each target's output is printed when it ends.
test:
	$(MAKE) -j4 deps build
	$(MAKE) -j2 --output-sync=target test-lane1 test-lane2

test-lane1:
	$(MAKE) -j1 test-integration test-python test-paimon test-fuzz

test-lane2:
	$(MAKE) -j1 test-nocgo test-engine lint

# go.mod tidy, go vet and staticcheck over every package.
lint: tools
	$(GO) mod tidy -diff
	$(GO) vet -tags $(TAGS) ./...
	$(STATICCHECK) -tags $(TAGS) ./...

# Unit tests of every package that does not link DuckDB, with the race detector;
# pypaimon reads what the lake package's compaction test wrote (LAKE_PYPAIMON).
test-nocgo: tools py-deps kafka-broker
	VERSITYGW=$(VERSITYGW) FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) LAKE_PYPAIMON=$(PAIMON_PY) CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 30m $(GOTESTFLAGS) $(NOCGO_PKGS)

# The DuckDB engine package and the command.
test-engine: kafka-broker
	FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) $(GO) test -tags $(TAGS) -count=1 $(GOTESTFLAGS) ./query/... ./cmd/...

# Black-box tests against the real binary (Go ADBC driver); the crash test
# reads the snapshots with pypaimon through FLIGHTD_PAIMON_PYTHON, the
# operator's page is driven in headless Chromium (make browser). Each test
# starts its own servers, so they run 4 at a time (most of their time is
# spent waiting on servers, brokers and JVMs).
test-integration: build tools paimon-check-jar jdbc-check-jar kafka-broker py-deps
	VERSITYGW=$(VERSITYGW) FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) FLIGHTD_PAIMON_PYTHON=$(PAIMON_PY) FLIGHTD_REQUIRE_BROWSER=1 $(GO) test -count=1 -parallel 4 -timeout 30m $(GOTESTFLAGS) ./integration/...

# The multi-broker Kafka tests (named *KafkaCluster*: 3 brokers, one killed
# under load), one package at a time; not part of make test.
test-kafka-cluster: build kafka-broker
	FLIGHTD_KAFKA_CLUSTER=1 FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -p 1 -count=1 -timeout 30m -run KafkaCluster $(GOTESTFLAGS) ./internal/testkafka/... ./logstore/... ./integration/...

# Python clients: ADBC + pandas + Polars, and `flightd sql`.
test-python: build py-deps
	FLIGHTD_BIN=$(CURDIR)/$(BIN) $(PY) -m pytest -q -p no:cacheprovider integration/python

# pypaimon reads the Paimon tables flightd tiered.
test-paimon: build py-deps
	FLIGHTD_BIN=$(CURDIR)/$(BIN) $(PVENV)/bin/python -m pytest -q -p no:cacheprovider integration/paimon

# Go fuzz targets, package:Target, over every decoder of bytes a client or
# another engine controls. Packages in FUZZ_TAGGED link DuckDB and build
# with -tags $(TAGS). A target missing from its package is reported by
# go test ("matches no fuzz tests") and passes.
FUZZ_TARGETS := \
	./lake/paimontype:FuzzParseType \
	./lake/paimontype:FuzzSchemaJSON \
	./lake:FuzzSnapshotJSON \
	./lake/manifest:FuzzManifest \
	./lake/manifest:FuzzManifestList \
	./lake/manifest:FuzzIndexManifest \
	./lake/manifest:FuzzDeletionVector \
	./lake/expr:FuzzBind \
	./perf:FuzzUnmarshalPerf \
	./perf:FuzzUnmarshalToken \
	./flightsql:FuzzStatementTicket \
	./flightsql:FuzzBearerToken \
	./internal/logcodec:FuzzDecode \
	./lakestream:FuzzIngestBatch \
	./sqlparse:FuzzParse \
	./query/plan:FuzzPart \
	./query:FuzzStatementSplitAgreesWithDuckDB
FUZZ_TAGGED := ./query
FUZZTIME    ?= 2m

# Each fuzz target for FUZZTIME (one at a time: go test fuzzes one target per run).
# Go's fuzzing engine can end a run with "context deadline exceeded" and no
# failing input when FUZZTIME runs out during a slow input (FuzzSchemaJSON's
# deep schemas on a loaded machine): such a run is repeated, up to three runs
# (it ended one run in four of make test's 2 s runs on a loaded machine). A
# real failure writes its input to testdata and fails at once.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; tags=; \
		case " $(FUZZ_TAGGED) " in *" $$pkg "*) tags="-tags $(TAGS)";; esac; \
		for try in 1 2 3; do \
			echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
			if out=$$($(GO) test $$tags -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg 2>&1); then echo "$$out"; break; fi; \
			echo "$$out"; \
			if [ $$try != 3 ] && echo "$$out" | grep -q 'context deadline exceeded' && ! echo "$$out" | grep -q 'Failing input written'; then \
				echo "fuzz $$name: the engine's deadline ran out during an input, not a failure; again"; continue; fi; \
			exit 1; \
		done; \
	done

# Each fuzz target for a few seconds (make test).
test-fuzz:
	$(MAKE) fuzz FUZZTIME=2s

bench: build
	FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -run='^$$' -bench='$(QUICK_BENCH)' -benchmem -count=6 ./bench/... ./logstore/... ./union/...

# The crash test and the cluster kill loop with 200 SIGKILL cycles each
# (make test runs 20).
soak: build py-deps kafka-broker tools paimon-check-jar
	FLIGHTD_BIN=$(CURDIR)/$(BIN) FLIGHTD_PAIMON_PYTHON=$(PAIMON_PY) FLIGHTD_CRASH_CYCLES=200 $(GO) test -count=1 -timeout 60m -run TestCrashModel -v ./integration/
	VERSITYGW=$(VERSITYGW) FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) FLIGHTD_PAIMON_PYTHON=$(PAIMON_PY) FLIGHTD_CRASH_CYCLES=200 $(GO) test -count=1 -timeout 60m -run TestClusterKillLoop -v ./integration/

# What several nodes cost and how fast they see each other (BenchmarkCluster):
# CPU per million rows with 1-3 nodes, ack on one node to t$rt on another,
# failover of the tiering owner.
bench-cluster: build kafka-broker
	FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -run='^$$' -bench='Cluster/cpu' -benchtime=1x -timeout 30m ./bench/
	FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -run='^$$' -bench='Cluster/visible' -benchtime=500x -timeout 30m ./bench/
	FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -run='^$$' -bench='Cluster/failover' -benchtime=3x -timeout 30m ./bench/

# Every benchmark but the long sustained run.
QUICK_BENCH := Ingest|ReadRealtime|Freshness|Parquet|PrimaryKey|Append

# A short run of every benchmark, for the table in docs/performance.md.
bench-quick: build
	FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -run='^$$' -bench='$(QUICK_BENCH)' -benchtime=2x ./bench/ ./union/

# The read path end to end, every figure of docs/performance.md's reads:
# bench/readpath_bench_test.go (SELECT * of t and t$rt, aggregates, point
# lookups idle and under load, ingest, and DuckDB's read_parquet of the same
# files, bin/duckref, as the reference in the same run), the server's peak
# memory while tiering a primary-key burst (bench/tiering_bench_test.go) and
# point lookups on an S3 warehouse whose every request takes 20 ms
# (bench/s3_bench_test.go). FLIGHTD_READ_ROWS sets the read table's size
# (default 1000000), FLIGHTD_TIER_ROWS the burst's (default 10000000).
bench-read: build tools
	$(GO) build -tags $(TAGS) -o bin/duckref ./bench/duckref
	FLIGHTD_BIN=$(CURDIR)/$(BIN) FLIGHTD_DUCKREF_BIN=$(CURDIR)/bin/duckref $(GO) test -run='^$$' -bench=ReadPath -benchtime=1x -timeout 60m -v ./bench/
	FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -run='^$$' -bench=TierBurst -benchtime=1x -timeout 30m -v ./bench/
	FLIGHTD_BIN=$(CURDIR)/$(BIN) VERSITYGW=$(VERSITYGW) $(GO) test -run='^$$' -bench=S3PointLookup -benchtime=1x -timeout 30m -v ./bench/

# Change latency of a streaming read of t$rt (acknowledgement to delivery,
# p50/p99) beside 0.5M rows/s of other ingest (bench/stream_bench_test.go).
bench-stream: build
	FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -run='^$$' -bench=StreamLatency -benchtime=4000x -timeout 10m ./bench/

# The crowd (bench/crowd_bench_test.go): 8 bulk writers, 8 single-row
# writers, 8 point readers of t$rt and 8 scanners for FLIGHTD_LOAD_SECONDS
# (default 90), then bursts of 100 x 3 and 500 x 1 SELECT 1: per-kind
# p50/p99, failures by code, peak RSS, and nothing lost or doubled.
bench-load: build
	FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -run='^$$' -bench=Crowd -benchtime=1x -timeout 30m -v ./bench/

# Sustained ingest with tiering running (default 60 s at 1M rows/s; see bench/sustained_bench_test.go).
bench-sustained: build
	FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -run='^$$' -bench=Sustained -benchtime=1x -timeout 30m ./bench/

# The Kafka log beside the Badger log, in one run (ratios): one ingest
# stream of 10M rows into an append and a 4-bucket primary-key table,
# acknowledgement to t$rt at 0.5M rows/s of other ingest, and the log's own
# append latency (logstore/kafkalog). FLIGHTD_SUSTAIN_SECONDS=300
# FLIGHTD_BENCH_LOGS=kafka make bench-sustained: tiering from Kafka at 1M rows/s.
bench-kafka: build kafka-broker
	FLIGHTD_BENCH_LOGS=badger,kafka FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -run='^$$' -bench='Ingest/table=(append|pk4)/ack=stream/clients=1/' -benchtime=1x -count=2 -timeout 30m ./bench/
	FLIGHTD_BENCH_LOGS=badger,kafka FLIGHTD_FRESHNESS_LOAD=500000 FLIGHTD_FRESHNESS_RATE=100 FLIGHTD_FRESHNESS_INTERVAL=30s FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) FLIGHTD_BIN=$(CURDIR)/$(BIN) $(GO) test -tags $(TAGS) -run='^$$' -bench=Freshness -benchtime=3000x -timeout 30m ./bench/
	FLIGHTD_KAFKA_LIB=$(KAFKA_LIB) $(GO) test -run='^$$' -bench=Append -benchtime=3s ./logstore/kafkalog/

FORCE:

clean:
	rm -rf bin integration/java/target integration/jdbc/target integration/kafka/target
