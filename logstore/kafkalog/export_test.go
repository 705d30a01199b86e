package kafkalog

// TailRecords returns how many records l's tailer has taken so far.
func TailRecords(l *Log) int64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.tailRecords
}
