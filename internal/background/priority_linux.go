package background

import "syscall"

// lowerPriority lowers the calling thread's priority by Nice (on Linux,
// PRIO_PROCESS with a thread id applies to that thread only). Failure
// leaves the priority as it was.
func lowerPriority() {
	tid := syscall.Gettid()
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, tid)
	if err != nil {
		return
	}
	// The raw syscall returns 20 - nice.
	_ = syscall.Setpriority(syscall.PRIO_PROCESS, tid, min(20-cur+Nice, 19))
}

// threadNice returns the calling thread's nice value.
func threadNice() (int, error) {
	cur, err := syscall.Getpriority(syscall.PRIO_PROCESS, syscall.Gettid())
	return 20 - cur, err
}
