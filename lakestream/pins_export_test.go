package lakestream

// SetPinHook makes every read that chooses a snapshot call f after the
// choice and before the pin (sid 0: the table has no snapshot). The
// returned func restores the previous hook.
func SetPinHook(f func(tableID string, sid int64)) (restore func()) {
	old := pinHook
	pinHook = f
	return func() { pinHook = old }
}

// SetExpireBlockedHook makes every expiration that has to wait for reads
// choosing their snapshot call f before it waits. The returned func
// restores the previous hook.
func SetExpireBlockedHook(f func(tableID string)) (restore func()) {
	old := expireBlockedHook
	expireBlockedHook = f
	return func() { expireBlockedHook = old }
}
