// Package kafkalog is flightd's log on Apache Kafka: the logstore.Log that
// keeps acknowledged, un-tiered writes on the brokers every data team
// already runs, replicated by them, instead of on one server's disk.
//
// # Layout
//
// One topic per table, <prefix><database>.<table>.<table id> (see
// topicName), created by the log with a partition per bucket,
// cleanup.policy=delete, unlimited retention (retention.ms and
// retention.bytes -1) and max.message.bytes of twice Options.MaxRecordBytes.
// Bucket b is partition b. Only the log deletes records: Truncate calls
// DeleteRecords below what the caller (tiering, after the lake holds the rows
// and --log-retention passed) allows, and DropTable deletes the topic.
//
// A record holds one log entry, unchanged (flightd's Arrow IPC payload with
// its schema id), or a part of one larger than Options.MaxRecordBytes: the
// parts are consecutive records of one transaction. Its header
// flightd.entry says which rows and which part (see entryHeader).
//
// # Offsets
//
// The log's offsets count rows, as logstore.Store's do, and they are what
// tiering records in a snapshot (lakestream.log-offsets) and what orders a
// key's versions (_SEQUENCE_NUMBER in the lake is the row offset moved
// above the bucket's newest). Kafka offsets count records and control
// markers, with gaps (transaction markers, aborted records), and never
// leave this package.
//
// Several nodes may write one partition at once (each with its own
// transactional id, Options.NodeID), so no writer can know the row offsets
// of its records when it writes them. A record says only how many rows its
// entry holds; the rows are numbered in the partition's order, the same way
// by every reader (see numberer): an entry's rows follow those of every
// entry whose first record comes earlier, and aborted records are never
// seen (read_committed). Every node's tailer follows every partition of
// the log and numbers it from an anchor: Kafka offset 0 is row 0, and
// Truncate writes the row its cut begins at to <prefix>.log.anchors before
// it deletes anything. Row offsets are dense on every node. An in-memory
// index of where entries begin (every one numbered, thinned past 64k
// points) serves reads.
//
// # Atomic appends
//
// One committer writes the queued appends as one Kafka transaction (group
// commit) with the idempotent producer and acks=all. An append returns once
// the transaction committed and the tailer numbered its entries: its rows
// are then in HighWatermarks and readable. A transaction's entries in one
// table carry its tag and count, and the tailer makes them visible
// together (Kafka writes commit markers partition by partition): an append
// that spans buckets is in all of them or none, for readers of
// HighWatermarks, for Read and so for t$rt, streams and tiering. The
// committer takes turns with two transactional producers (see writer).
// Their transactional ids (Options.TransactionalID .0 and .1) fence an
// older writer of the same node: a writer killed in the middle of a
// transaction has it aborted when it starts again.
//
// An append whose commit fails is answered by what the tailer then sees:
// the log aborts the transaction (a commit the coordinator already decided
// completes instead), and the entries are numbered or passed over. When
// that cannot be seen in time, the error says the outcome is unknown.
//
// A node killed in the middle of a transaction holds back the last stable
// offset of the partitions it was writing, and so the acknowledgements of
// every other writer there, until it starts again or the brokers abort the
// transaction (the transaction timeout is Options.Timeout; brokers look for
// timed-out transactions every
// transaction.abort.timed.out.transaction.cleanup.interval.ms, 10 s by
// default).
//
// # Several nodes
//
// With Options.Shared, Sync makes a write another node acknowledged
// visible: it lists the table's last stable offsets and waits until the
// tailer has numbered the partitions up to them (one round trip to the
// brokers, and the tailer's fetch). The log also looks for topics other
// nodes made once a second.
//
// # Recovery
//
// Open initializes the transactional writers (aborting what a crashed
// writer of this node left open), lists the topics under the prefix, and
// has the tailer number every partition up to its last stable offset. It
// begins near the end: every record's header carries a checkpoint of the
// numbering its writer knew (rows before some Kafka offset), and the last
// records' checkpoint is where the tailer starts, so a restart reads the
// end of each partition, not the whole retained log (24 h of it by
// default). A read of older rows begins at a point found by bisecting the
// partition on the records' checkpoints (see locate). With
// Options.RecoverInBackground a log whose brokers cannot be reached at Open
// is returned anyway and keeps trying; until it has recovered, Ready says
// why, and reads and appends fail with logstore.ErrUnavailable (an empty
// set of high watermarks must not pass for an empty log).
//
// # One writer per node
//
// A second log with the same transactional ids (the same prefix and node
// id) fences the first when it opens. The first then refuses every append
// with logstore.ErrFenced and never initializes a writer again, which
// would fence the second in turn.
//
// # Durability
//
// An append is acknowledged once every broker in the partition's in-sync
// replica set has it (acks=all). Kafka does not fsync by default: a single
// broker that loses power can lose acknowledged records. Run three brokers
// with replication factor 3 and min.insync.replicas=2 (--kafka-replication)
// to survive a machine.
package kafkalog
