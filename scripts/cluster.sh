#!/usr/bin/env bash
# A flightd cluster on this machine, for trying it out (make cluster):
# one Kafka broker (KRaft), one Versity S3 Gateway (posix backend) and three
# flightd nodes n1, n2, n3 over one warehouse (s3://flightd/warehouse) and
# one Kafka log. Everything listens on 127.0.0.1 only and keeps its state
# under $CLUSTER_DIR (default ./data/cluster; `make run`'s ./data is not
# touched otherwise). The state survives a stop: the next start carries on
# with the same tables; FRESH=1 starts from nothing. Ctrl-C (or SIGTERM)
# stops every process it started: the nodes first (they leave the cluster),
# then the S3 gateway and the broker. Should this script be killed with
# SIGKILL, they keep running: their pids are in $CLUSTER_DIR/run/*.pid.
# Each node runs with --memory-limit 15% (three share the machine).
#
# Settings (environment; make passes its own paths):
#   CLUSTER_DIR       ./data/cluster   state and logs (logs/*.log)
#   FLIGHTD_BIN       bin/flightd      the flightd binary (copied to $CLUSTER_DIR/run at start)
#   VERSITYGW         bin/tools/versitygw
#   KAFKA_LIB         integration/kafka/target/lib (make kafka-broker)
#   NODE_PORTS        "31337 31338 31339"  Flight SQL ports of n1, n2, n3 (as many nodes as ports)
#   METRICS_OFFSET    1000             node metrics on 127.0.0.1:<port + offset>/metrics; 0: none
#   KAFKA_PORT        19092            (KRaft controller on KAFKA_PORT + 1)
#   S3_PORT           17070
#   CLUSTER_FLAGS     ""               more `flightd serve` flags for every node, after the
#                                      script's own (a flag given twice: the last one wins),
#                                      e.g. "--tiering-interval 5s"
#   FRESH             ""               1: delete $CLUSTER_DIR first
set -euo pipefail

cd "$(dirname "$0")/.."
ROOT=$PWD
CLUSTER_DIR=${CLUSTER_DIR:-$ROOT/data/cluster}
FLIGHTD_BIN=${FLIGHTD_BIN:-$ROOT/bin/flightd}
VERSITYGW=${VERSITYGW:-$ROOT/bin/tools/versitygw}
KAFKA_LIB=${KAFKA_LIB:-$ROOT/integration/kafka/target/lib}
NODE_PORTS=${NODE_PORTS:-"31337 31338 31339"}
METRICS_OFFSET=${METRICS_OFFSET:-1000}
KAFKA_PORT=${KAFKA_PORT:-19092}
KAFKA_CONTROLLER_PORT=$((KAFKA_PORT + 1))
S3_PORT=${S3_PORT:-17070}
CLUSTER_FLAGS=${CLUSTER_FLAGS:-}
HOST=127.0.0.1
BUCKET=flightd
# The gateway's root user; flightd gets the secret from the environment only.
S3_ACCESS_KEY=flightdcluster
S3_SECRET_KEY=flightdclustersecret
START_TIMEOUT=${START_TIMEOUT:-120} # seconds each process may take to serve

say() { printf 'cluster: %s\n' "$*"; }
die() { printf 'cluster: %s\n' "$*" >&2; exit 1; }

# ---- checks ----------------------------------------------------------------

[ -x "$FLIGHTD_BIN" ] || die "no flightd binary at $FLIGHTD_BIN: run make build (make cluster does)"
[ -x "$VERSITYGW" ] || die "no Versity S3 Gateway at $VERSITYGW: run make tools (make cluster does)"
compgen -G "$KAFKA_LIB/kafka_2.13-*.jar" >/dev/null || die "no Kafka jars in $KAFKA_LIB: run make kafka-broker (make cluster does)"
JAVA=java
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then JAVA=$JAVA_HOME/bin/java; fi
command -v "$JAVA" >/dev/null || die "no java (17 or later) on PATH or in JAVA_HOME: the Kafka broker needs it"

# listening HOST PORT: something accepts connections there.
listening() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

PORTS="$KAFKA_PORT $KAFKA_CONTROLLER_PORT $S3_PORT"
for p in $NODE_PORTS; do
	PORTS="$PORTS $p"
	[ "$METRICS_OFFSET" = 0 ] || PORTS="$PORTS $((p + METRICS_OFFSET))"
done
for p in $PORTS; do
	if listening "$HOST" "$p"; then
		hint=""
		if compgen -G "${CLUSTER_DIR:?}/run/*.pid" >/dev/null; then
			hint=" An earlier run that was killed may have left its processes: their ids are in $CLUSTER_DIR/run/*.pid."
		fi
		die "port $HOST:$p is in use (another make cluster or make run?); stop it, or choose other ports (NODE_PORTS, KAFKA_PORT, S3_PORT, METRICS_OFFSET).$hint"
	fi
done

if [ "${FRESH:-}" = 1 ]; then
	say "FRESH=1: deleting $CLUSTER_DIR"
	rm -rf "$CLUSTER_DIR"
fi
KDIR=$CLUSTER_DIR/kafka
S3DIR=$CLUSTER_DIR/s3
LOGS=$CLUSTER_DIR/logs
RUN=$CLUSTER_DIR/run
mkdir -p "$KDIR/data" "$S3DIR/$BUCKET" "$LOGS" "$RUN"

# ---- process bookkeeping -----------------------------------------------------

NAMES=() # what each started process is, in start order
PIDS=()

started() { NAMES+=("$1"); PIDS+=("$2"); echo "$2" >"$RUN/$1.pid"; }

# Each process runs in a session of its own, so that Ctrl-C reaches only
# make and this script, which then stops them in order (the nodes before
# the broker they leave the cluster through). setsid execs the program in
# place: $! is its pid.
SETSID=()
if command -v setsid >/dev/null; then SETSID=(setsid); fi

alive() { kill -0 "$1" 2>/dev/null; }

# stop_group BOUND NAME...: SIGTERM to each named process still
# running, SIGKILL to any still running after BOUND seconds, then reap.
stop_group() {
	local bound=$1 i n pids=()
	shift
	for n in "$@"; do
		for i in "${!NAMES[@]}"; do
			if [ "${NAMES[$i]}" = "$n" ] && alive "${PIDS[$i]}"; then
				kill -TERM "${PIDS[$i]}" 2>/dev/null || true
				pids+=("${PIDS[$i]}")
			fi
		done
	done
	[ ${#pids[@]} -gt 0 ] || return 0
	local waited=0 left
	while :; do
		left=()
		for i in "${pids[@]}"; do alive "$i" && left+=("$i"); done
		[ ${#left[@]} -gt 0 ] || break
		if [ "$waited" -ge $((bound * 10)) ]; then
			say "still running after ${bound}s, killing: ${left[*]}"
			kill -KILL "${left[@]}" 2>/dev/null || true
			break
		fi
		sleep 0.1
		waited=$((waited + 1))
	done
	for i in "${pids[@]}"; do wait "$i" 2>/dev/null || true; done
}

STOPPING=0
SLEEP=""
cleanup() {
	[ "$STOPPING" = 0 ] || return 0
	STOPPING=1
	trap '' INT TERM # a second Ctrl-C does not cut the stop short; it is bounded
	[ -z "$SLEEP" ] || kill "$SLEEP" 2>/dev/null || true
	echo
	say "stopping"
	local nodes=() n
	for n in "${NAMES[@]}"; do case $n in n*) nodes+=("$n") ;; esac; done
	# flightd's own --shutdown-grace is 10 s; it leaves the cluster and
	# closes the log, which needs the broker, so the broker stops last.
	[ ${#nodes[@]} -eq 0 ] || stop_group 20 "${nodes[@]}"
	stop_group 10 versitygw
	stop_group 30 kafka
	rm -f "$RUN"/*.pid
	say "stopped; state kept in $CLUSTER_DIR (FRESH=1 make cluster starts from nothing)"
}
# Stopped on request: a clean stop is a success (make says nothing).
trap 'cleanup; exit 0' INT TERM
trap cleanup EXIT

# wait_for NAME PID LOG FROM CHECK...: poll CHECK until it succeeds; fail,
# showing LOG past its first FROM bytes (this start's lines), when the
# process exits first or START_TIMEOUT passes.
wait_for() {
	local name=$1 pid=$2 log=$3 from=$4 i rc
	shift 4
	for ((i = 0; i < START_TIMEOUT * 5; i++)); do
		if "$@"; then return 0; fi
		if ! alive "$pid"; then
			wait "$pid" 2>/dev/null && rc=0 || rc=$?
			echo "--- $log:" >&2
			tail -c +$((from + 1)) "$log" | tail -n 40 >&2 || true
			die "$name exited (status $rc) before it served"
		fi
		sleep 0.2
	done
	echo "--- $log:" >&2
	tail -c +$((from + 1)) "$log" | tail -n 40 >&2 || true
	die "$name did not serve within ${START_TIMEOUT}s"
}

# logged FILE OFFSET TEXT: FILE holds TEXT past its first OFFSET bytes.
logged() { tail -c +$(($2 + 1)) "$1" | grep -q -F "$3"; }

# ---- Kafka: one KRaft node, broker and controller ------------------------------

# server.properties as internal/testkafka writes it for one node: every
# internal topic with one replica, no initial rebalance delay (a node joins
# the cluster's group at once), records of the log's largest entries, and
# transactions that a killed writer left open aborted within a second of
# their timeout (--kafka-timeout) rather than ten.
cat >"$KDIR/server.properties" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@$HOST:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$KAFKA_PORT,CONTROLLER://$HOST:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$KAFKA_PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dir=$KDIR/data
num.partitions=1
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
delete.topic.enable=true
group.initial.rebalance.delay.ms=0
offsets.topic.num.partitions=4
offsets.topic.replication.factor=1
transaction.state.log.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.abort.timed.out.transaction.cleanup.interval.ms=1000
share.coordinator.state.topic.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# The log sets max.message.bytes (2 MiB + 64 KiB) on the topics of its
# tables; this is the limit of the other topics it and the nodes create.
message.max.bytes=4194304
EOF
# Kafka's log at WARN, plus the line that says the server started.
cat >"$KDIR/log4j2.properties" <<'EOF'
status = error
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
logger.raftserver.name = kafka.server.KafkaRaftServer
logger.raftserver.level = info
EOF
if [ ! -s "$KDIR/cluster.id" ]; then
	# A Kafka Uuid as kafka-storage random-uuid prints it: 16 random bytes,
	# URL-safe base64 without padding, not starting with '-'.
	while :; do
		id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
		[ "${id:0:1}" != - ] && break
	done
	echo "$id" >"$KDIR/cluster.id"
fi
KAFKA_CP="$KAFKA_LIB/*"
say "formatting Kafka's storage (once) in $KDIR/data"
"$JAVA" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true \
	-Dlog4j2.configurationFile="$KDIR/log4j2.properties" -cp "$KAFKA_CP" \
	kafka.tools.StorageTool format --ignore-formatted \
	--cluster-id "$(cat "$KDIR/cluster.id")" --config "$KDIR/server.properties" \
	>"$LOGS/kafka-format.log" 2>&1 || { cat "$LOGS/kafka-format.log" >&2; die "kafka-storage format failed"; }

say "starting Kafka on $HOST:$KAFKA_PORT (log: $LOGS/kafka.log)"
echo "=== cluster.sh: start $(date -u +%FT%TZ)" >>"$LOGS/kafka.log"
kafka_from=$(wc -c <"$LOGS/kafka.log")
# The JVM flags of internal/testkafka: a bounded heap, the serial collector,
# C1 only, and an exit rather than a limp on running out of heap.
"${SETSID[@]}" "$JAVA" -Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:+ExitOnOutOfMemoryError \
	-Djava.awt.headless=true -Dlog4j2.configurationFile="$KDIR/log4j2.properties" \
	-cp "$KAFKA_CP" kafka.Kafka "$KDIR/server.properties" >>"$LOGS/kafka.log" 2>&1 &
started kafka $!

# ---- S3: Versity S3 Gateway over a directory -------------------------------------

# The posix backend's buckets are the directories under its root:
# $S3DIR/$BUCKET is the bucket (made above).
say "starting Versity S3 Gateway on http://$HOST:$S3_PORT over $S3DIR (log: $LOGS/versitygw.log)"
echo "=== cluster.sh: start $(date -u +%FT%TZ)" >>"$LOGS/versitygw.log"
vgw_from=$(wc -c <"$LOGS/versitygw.log")
VGW_LOG_LEVEL=silent "${SETSID[@]}" "$VERSITYGW" --access "$S3_ACCESS_KEY" --secret "$S3_SECRET_KEY" --region us-east-1 \
	--port "$HOST:$S3_PORT" --quiet posix "$S3DIR" >>"$LOGS/versitygw.log" 2>&1 &
started versitygw $!

wait_for versitygw "${PIDS[1]}" "$LOGS/versitygw.log" "$vgw_from" listening "$HOST" "$S3_PORT"
wait_for kafka "${PIDS[0]}" "$LOGS/kafka.log" "$kafka_from" listening "$HOST" "$KAFKA_PORT"
say "Kafka and S3 are up"

# ---- flightd nodes --------------------------------------------------------------------

# One copy of the binary for all nodes, so that a rebuild of bin/flightd
# while they start does not give them different versions.
cp -f "$FLIGHTD_BIN" "$RUN/flightd.tmp" && mv -f "$RUN/flightd.tmp" "$RUN/flightd"

export FLIGHTD_S3_SECRET_ACCESS_KEY=$S3_SECRET_KEY
i=0
for port in $NODE_PORTS; do
	i=$((i + 1))
	id=n$i
	log=$LOGS/$id.log
	metrics=()
	[ "$METRICS_OFFSET" = 0 ] || metrics=(--metrics-addr "$HOST:$((port + METRICS_OFFSET))")
	say "starting node $id on grpc://$HOST:$port (log: $log)"
	echo "=== cluster.sh: start $(date -u +%FT%TZ)" >>"$log"
	from=$(wc -c <"$log") # the log is appended to: look at this start's lines only
	# shellcheck disable=SC2086 # CLUSTER_FLAGS is a list of flags
	"${SETSID[@]}" "$RUN/flightd" serve \
		--node-id "$id" \
		--listen "$HOST:$port" \
		--advertise-address "grpc://$HOST:$port" \
		--data-dir "$CLUSTER_DIR/$id" \
		--warehouse "s3://$BUCKET/warehouse" \
		--s3-endpoint "http://$HOST:$S3_PORT" \
		--s3-region us-east-1 \
		--s3-access-key-id "$S3_ACCESS_KEY" \
		--log "kafka://$HOST:$KAFKA_PORT" \
		--kafka-replication 1 \
		--cluster-session-timeout 10s \
		--memory-limit 15% \
		"${metrics[@]}" \
		$CLUSTER_FLAGS >>"$log" 2>&1 &
	pid=$!
	started "$id" "$pid"
	# One at a time, as the integration tests start them: the first creates
	# the cluster's topics, each later one joins a running group.
	wait_for "$id" "$pid" "$log" "$from" logged "$log" "$from" "flightd listening"
done

# ---- ready ---------------------------------------------------------------------------------

first=${NODE_PORTS%% *}
second=$(echo "$NODE_PORTS" | awk '{print $2}')
second=${second:-$first}
rel=${FLIGHTD_BIN#"$ROOT"/}
cat <<EOF

flightd cluster running: ${#PIDS[@]} processes, state in $CLUSTER_DIR
$(i=0; for p in $NODE_PORTS; do i=$((i + 1)); m=""; [ "$METRICS_OFFSET" = 0 ] || m="   metrics http://$HOST:$((p + METRICS_OFFSET))/metrics"; echo "  node n$i   grpc://$HOST:$p$m"; done)
  Kafka     $HOST:$KAFKA_PORT (--log kafka://$HOST:$KAFKA_PORT)
  S3        http://$HOST:$S3_PORT, warehouse s3://$BUCKET/warehouse (access key $S3_ACCESS_KEY, secret $S3_SECRET_KEY)
  logs      $LOGS/

Connect to any node, e.g.:
  $rel sql --server grpc://$HOST:$second 'SELECT * FROM sys.nodes'
  $rel sql --server grpc://$HOST:$first "CREATE TABLE t (id BIGINT, v STRING, PRIMARY KEY (id) NOT ENFORCED)"
  $rel sql --server grpc://$HOST:$second "INSERT INTO t VALUES (1, 'a')"
  $rel sql --server grpc://$HOST:$first 'SELECT * FROM "t\$rt"'
  $rel sql --server grpc://$HOST:$first 'SELECT DISTINCT "table", owner FROM sys.tiering'
Python (ADBC): adbc_driver_flightsql.dbapi.connect("grpc://$HOST:$first", autocommit=True)

Ctrl-C stops everything. See docs/cluster.md.
EOF

# ---- run until stopped --------------------------------------------------------------------

# A process that exits is reported, not restarted, and the others keep
# running: killing a node (or the broker) is a way to try the cluster's
# failure behaviour (docs/cluster.md). stderr goes to /dev/null in the loop:
# bash would print a "Killed ..." line of its own for a process a signal ended.
declare -A reported=()
{
	while :; do
		for i in "${!PIDS[@]}"; do
			pid=${PIDS[$i]}
			if [ -z "${reported[$pid]:-}" ] && ! alive "$pid"; then
				reported[$pid]=1
				wait "$pid" && rc=0 || rc=$?
				say "${NAMES[$i]} (pid $pid) exited with status $rc; see $LOGS/${NAMES[$i]}.log. The others keep running; Ctrl-C stops them."
			fi
		done
		if [ ${#reported[@]} -eq ${#PIDS[@]} ]; then
			say "every process has exited"
			exit 1
		fi
		sleep 1 &
		SLEEP=$!
		wait "$SLEEP" || true
	done
} 2>/dev/null
