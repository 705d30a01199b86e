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
// leave this package: every record carries its entry's row offset, and an
// in-memory index maps row offsets to Kafka offsets (every entry written
// since Open; bisection of the partition for older ones). Row offsets are
// dense: an aborted or failed append gives its offsets back, and the next
// append takes them.
//
// # Atomic appends
//
// One committer writes the queued appends as one Kafka transaction (group
// commit) with the idempotent producer and acks=all, and advances the high
// watermarks only after the transaction committed: an append that spans
// buckets is in all of them or none, for readers of HighWatermarks, for
// Read (a read_committed consumer: aborted records are never seen) and so
// for t$rt, streams and tiering. The committer takes turns with two
// transactional producers (see writer). Their transactional ids
// (Options.TransactionalID .0 and .1) fence an older writer: a writer
// killed in the middle of a transaction has it aborted when the next one
// starts.
//
// An append whose transaction fails is answered only once its outcome is
// known: the log aborts it, or, when the commit's answer was lost, reads
// the partitions' committed ends and answers by what they hold. When the
// brokers cannot be asked within Options.Timeout, the error says the
// outcome is unknown (the rows may be in the log, and then show up once the
// next append settles it).
//
// # Recovery
//
// Open lists the topics under the prefix and reads each partition's last
// committed entry (its end is the high watermark) and first one (its base
// is the log start), after initializing the transactional writer so that a
// transaction a crashed writer left open does not hold the last stable
// offset back. Truncate always keeps a bucket's last entry, so that the
// high watermark survives truncation. With Options.RecoverInBackground a
// log whose brokers cannot be reached at Open is returned anyway and keeps
// trying; until it has recovered, Ready says why, and reads and appends
// fail with logstore.ErrUnavailable (an empty set of high watermarks must
// not pass for an empty log).
//
// # One writer
//
// A second log on the same topics (the same prefix, so the same
// transactional ids) fences the first when it opens. The first then refuses
// every append with logstore.ErrFenced and never initializes a writer
// again, which would fence the second in turn and let both write the same
// row offsets.
//
// # Durability
//
// An append is acknowledged once every broker in the partition's in-sync
// replica set has it (acks=all). Kafka does not fsync by default: a single
// broker that loses power can lose acknowledged records. Run three brokers
// with replication factor 3 and min.insync.replicas=2 (--kafka-replication)
// to survive a machine.
package kafkalog
