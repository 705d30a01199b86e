package cluster

import "hash/fnv"

// SlotOf returns the slot of a table among slots: the 32-bit FNV-1a hash of
// the table id modulo slots (which must be positive).
func SlotOf(tableID string, slots int32) int32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tableID))
	return int32(h.Sum32() % uint32(slots))
}
