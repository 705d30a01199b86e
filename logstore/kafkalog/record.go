package kafkalog

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/flightd/flightd/logstore"
)

// headerKey names the one header every record of the log carries.
const headerKey = "flightd.entry"

// entryHeader is what a record says of the log entry it holds (or a part of).
// Version 2, written since several nodes may write one partition:
//
//	0x02 | rows (int64 BE) | part (uint32 BE) | parts (uint32 BE) | txn (uint64 BE) | txnEntries (uint32 BE) | ckAt (int64 BE) | ckRow (int64 BE)
//
// A record does not say its row offsets: no writer can know them when it
// writes, since others may write the partition too. The rows are numbered
// in the partition's order (see numberer). Version 1, written by a log with
// one writer per topic prefix, put its base row offset first:
//
//	0x01 | base (int64 BE) | rows (int64 BE) | part (uint32 BE) | parts (uint32 BE)
//
// txn names the transaction (the group commit) the entry was written in,
// and txnEntries how many entries of this table it wrote: a reader makes
// them visible together (see txnHold). ckAt and ckRow are a checkpoint of
// the numbering the writer knew when it wrote: the partition's entries that
// begin before Kafka offset ckAt hold ckRow rows (ckAt -1: none). A reader
// that starts at a recent record, or bisects the partition, numbers from
// there instead of from the partition's start (see recoverPoint, locate).
//
// Its base matches the numbering and serves as the anchor of a partition
// truncated before anchors were kept (see anchors).
//
// An entry larger than Options.MaxRecordBytes is cut into parts records, in
// order, by one producer in one transaction; other producers' records may
// come between them.
type entryHeader struct {
	base        int64 // version 1 only; -1 in version 2
	rows        int64
	part, parts uint32
	txn         uint64
	txnEntries  uint32
	ckAt, ckRow int64 // version 2: a checkpoint of the numbering; ckAt -1: none
}

const (
	headerLenV1 = 1 + 8 + 8 + 4 + 4
	headerLen   = 1 + 8 + 4 + 4 + 8 + 4 + 8 + 8
)

func (h entryHeader) encode() []byte {
	b := make([]byte, headerLen)
	b[0] = 2
	binary.BigEndian.PutUint64(b[1:], uint64(h.rows))
	binary.BigEndian.PutUint32(b[9:], h.part)
	binary.BigEndian.PutUint32(b[13:], h.parts)
	binary.BigEndian.PutUint64(b[17:], h.txn)
	binary.BigEndian.PutUint32(b[25:], h.txnEntries)
	binary.BigEndian.PutUint64(b[29:], uint64(h.ckAt))
	binary.BigEndian.PutUint64(b[37:], uint64(h.ckRow))
	return b
}

// decodeHeader reads the record's entry header; a record without one, or
// with one that does not decode, is corruption.
func decodeHeader(r *kgo.Record) (entryHeader, error) {
	var raw []byte
	found := false
	for _, h := range r.Headers {
		if h.Key == headerKey {
			raw, found = h.Value, true
			break
		}
	}
	if !found {
		return entryHeader{}, corruptf(r, "no %s header", headerKey)
	}
	var h entryHeader
	switch {
	case len(raw) == headerLen && raw[0] == 2:
		h = entryHeader{
			base:       -1,
			rows:       int64(binary.BigEndian.Uint64(raw[1:])),
			part:       binary.BigEndian.Uint32(raw[9:]),
			parts:      binary.BigEndian.Uint32(raw[13:]),
			txn:        binary.BigEndian.Uint64(raw[17:]),
			txnEntries: binary.BigEndian.Uint32(raw[25:]),
			ckAt:       int64(binary.BigEndian.Uint64(raw[29:])),
			ckRow:      int64(binary.BigEndian.Uint64(raw[37:])),
		}
		if h.ckAt < -1 || h.ckAt >= r.Offset+1 || h.ckRow < 0 {
			return entryHeader{}, corruptf(r, "header checkpoint %d rows before Kafka offset %d", h.ckRow, h.ckAt)
		}
	case len(raw) == headerLenV1 && raw[0] == 1:
		h = entryHeader{
			base:  int64(binary.BigEndian.Uint64(raw[1:])),
			rows:  int64(binary.BigEndian.Uint64(raw[9:])),
			part:  binary.BigEndian.Uint32(raw[17:]),
			parts: binary.BigEndian.Uint32(raw[21:]),
			ckAt:  -1,
		}
		if h.base < 0 {
			return entryHeader{}, corruptf(r, "header base %d", h.base)
		}
	default:
		return entryHeader{}, corruptf(r, "%s header of %d bytes, version %d", headerKey, len(raw), firstByte(raw))
	}
	if h.rows < 1 || h.rows > maxEntryRows || h.parts < 1 || h.part >= h.parts {
		return entryHeader{}, corruptf(r, "header rows %d part %d/%d", h.rows, h.part, h.parts)
	}
	return h, nil
}

// maxEntryRows bounds an entry's rows (as logstore.Store does).
const maxEntryRows = 1 << 40

func firstByte(b []byte) int {
	if len(b) == 0 {
		return -1
	}
	return int(b[0])
}

func corruptf(r *kgo.Record, format string, args ...any) error {
	key := fmt.Appendf(nil, "%s/%d@%d", r.Topic, r.Partition, r.Offset)
	return &logstore.CorruptionError{Key: key, Err: fmt.Errorf(format, args...)}
}

// Topic names. A table's topic is
//
//	<prefix><database>.<table>.<id>
//
// database and table are the names the table had when its log began (for
// people reading a topic list; a rename keeps the topic), with every
// character Kafka does not allow, and '.', replaced by '_', and cut short to
// keep the name within Kafka's 249 characters. id is flightd's table id
// (lakestream.table-id, a uuid), escaped so that it decodes again: the log
// finds its tables by listing the topics under its prefix. A table dropped
// and created again has a new id, so a new topic.
const maxTopicLen = 249

func topicName(prefix, database, name, id string) string {
	eid := escapeID(id)
	room := maxTopicLen - len(prefix) - len(eid) - 1
	h := sanitize(database) + "." + sanitize(name)
	if database == "" || name == "" {
		h = sanitize(database + name)
	}
	if len(h) > room {
		h = h[:max(room, 0)]
	}
	if h == "" {
		return prefix + eid
	}
	return prefix + h + "." + eid
}

// parseTopic returns the table id of one of the log's topics.
//
// The log's own topics (anchorsTopic) and other flightd topics under the
// prefix begin with a '.' after it, which a table's topic never does.
func parseTopic(prefix, topic string) (string, bool) {
	rest, ok := strings.CutPrefix(topic, prefix)
	if !ok || rest == "" || rest[0] == '.' {
		return "", false
	}
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		rest = rest[i+1:]
	}
	return unescapeID(rest)
}

func legal(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !legal(c) {
			b[i] = '_'
		}
	}
	return string(b)
}

// escapeID keeps [A-Za-z0-9-] and writes every other byte as _XX (hex).
func escapeID(id string) string {
	var sb strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		if legal(c) && c != '_' {
			sb.WriteByte(c)
		} else {
			fmt.Fprintf(&sb, "_%02x", c)
		}
	}
	return sb.String()
}

func unescapeID(s string) (string, bool) {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_':
			if i+3 > len(s) {
				return "", false
			}
			v, err := hex.DecodeString(s[i+1 : i+3])
			if err != nil {
				return "", false
			}
			sb.WriteByte(v[0])
			i += 2
		case legal(c):
			sb.WriteByte(c)
		default:
			return "", false
		}
	}
	return sb.String(), sb.Len() > 0
}

// partitionOf maps a bucket to its partition: bucket b is partition b.
func partitionOf(b logstore.Bucket) (int32, error) {
	if b.Bucket < 0 {
		return 0, fmt.Errorf("%w: bucket %d of table %q has no Kafka partition", logstore.ErrInvalidEntry, b.Bucket, b.Table)
	}
	return b.Bucket, nil
}
