package manifest

// emptyRowBytes is the serialized BinaryRow of arity 0 (int32 BE arity, then
// an 8-byte null bit set), the partition of an unpartitioned table.
var emptyRowBytes = make([]byte, 12)

func emptyStats() SimpleStats {
	return SimpleStats{MinValues: emptyRowBytes, MaxValues: emptyRowBytes, NullCounts: []*int64{}}
}
