//go:build !linux

package testkafka

import "os/exec"

// setDeathSignal: only Linux can tie a child's life to its parent's; the
// test cleanups still stop every broker.
func setDeathSignal(cmd *exec.Cmd) {}
