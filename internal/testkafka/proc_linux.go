package testkafka

import (
	"os/exec"
	"syscall"
)

// setDeathSignal has the kernel SIGKILL the child when the thread that forked
// it ends; startProcess keeps that thread alive (locked) for as long as the
// child runs, so in effect when the test binary ends.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
