// Package testkafka runs real Apache Kafka brokers (4.4.0, KRaft mode, from
// the jars `make kafka-broker` copies from Maven Central) for tests in other
// packages.
//
// What it promises:
//
//   - Start runs one combined broker+controller node, StartCluster n of
//     them with a controller quorum of all n. Each node listens on free
//     127.0.0.1 ports only and keeps its data, configuration and log
//     (stdout and stderr of the JVM, Kafka's own log at WARN) in the test's
//     t.TempDir().
//   - Start and StartCluster return only once every node really serves: it
//     answers a metadata request with the cluster's id and lists itself (and,
//     for a cluster, all n brokers) as live. No fixed sleep stands in for
//     that; the wait is bounded and a failure reports the tail of the log.
//   - A start whose port was taken meanwhile is tried again on new ports.
//   - The configuration suits tests: topics are never created on their own
//     (auto.create.topics.enable=false), one partition by default, topics
//     can be deleted, consumer groups rebalance at once, and the internal
//     topics (consumer offsets, transaction state, share-group state) have
//     4 partitions replicated to every node, with a minimum ISR of 2 from 3
//     nodes on (1 below). The default replication factor is the number of
//     nodes and min.insync.replicas is 2 from 3 nodes on.
//   - Kill (SIGKILL) and Stop (SIGTERM, SIGKILL after a bound) end a node;
//     Restart runs it again on the same ports over the same data and waits
//     until it serves.
//   - No JVM outlives the test: a cleanup stops every node and waits for
//     its process, and on Linux each JVM gets SIGKILL when the test binary
//     dies (Pdeathsig), however it dies.
//
// The jars come from $FLIGHTD_KAFKA_LIB (make test sets it). Without it the
// test is skipped with how to get them; with it set but the jars missing, the
// test fails. StartCluster's multi-node tests are named *KafkaCluster* and run
// only when FLIGHTD_KAFKA_CLUSTER=1 (`make test-kafka-cluster`).
package testkafka
