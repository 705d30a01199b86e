package lakestream

// SetChangelogHook makes every changelog read call f once its start is
// chosen and pinned (snapshot 0: it starts at offset 0 with an empty table),
// before the log is read. The returned func restores the previous hook.
func SetChangelogHook(f func(snapshotID int64)) (restore func()) {
	old := changelogHook
	changelogHook = f
	return func() { changelogHook = old }
}
