package lakestream

import "github.com/apache/arrow-go/v18/arrow/array"

// SetChangelogHook makes every changelog read call f once its start is
// chosen and pinned (snapshot 0: it starts at offset 0 with an empty table),
// before the log is read. The returned func restores the previous hook.
func SetChangelogHook(f func(snapshotID int64)) (restore func()) {
	old := changelogHook
	changelogHook = f
	return func() { changelogHook = old }
}

// StreamCaughtUp says whether the stream reader r (from Stream) has
// returned everything below the high watermarks hws and would wait. It
// polls the log without waiting: rounds without rows do not hold it back.
func StreamCaughtUp(r array.RecordReader, hws map[int32]int64) bool {
	sr := r.(*streamReader)
	if sr.first != nil || !sr.marked {
		return false
	}
	for len(sr.round) == 0 {
		if found, err := sr.poll(); err != nil || !found {
			if err != nil {
				sr.err = err
				return false
			}
			break
		}
	}
	if len(sr.round) > 0 {
		return false
	}
	for b, hw := range hws {
		if sr.posOf(b) < hw {
			return false
		}
	}
	return true
}

// StreamPos is the stream reader's next offset of each bucket it knows.
func StreamPos(r array.RecordReader) map[int32]int64 { return r.(*streamReader).pos }

// SetStreamRoundRows bounds the rows of a stream's round; the returned
// func restores the bound.
func SetStreamRoundRows(n int64) (restore func()) {
	old := streamRoundRows
	streamRoundRows = n
	return func() { streamRoundRows = old }
}

// SetStreamCarry turns the key states a stream carries between its rounds
// off (every round replays the un-tiered rows below its position) or on.
func SetStreamCarry(on bool) (restore func()) {
	old := streamCarryOff
	streamCarryOff = !on
	return func() { streamCarryOff = old }
}

// SetStreamCarryMaxBytes sets the most a stream's carry holds.
func SetStreamCarryMaxBytes(n int64) (restore func()) {
	old := streamCarryMaxBytes
	streamCarryMaxBytes = n
	return func() { streamCarryMaxBytes = old }
}
