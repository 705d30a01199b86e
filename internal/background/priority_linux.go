package background

import "syscall"

// lowerPriority lowers the calling thread's priority by Nice (on Linux,
// PRIO_PROCESS with a thread id applies to that thread only), unless it is
// the main thread. Failure leaves the priority as it was.
func lowerPriority() {
	tid := syscall.Gettid()
	if onMainThread() {
		// The main thread: ps and top show its priority as the process's,
		// and Go parks it for good when a locked goroutine exits on it.
		return
	}
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

func onMainThread() bool { return syscall.Gettid() == syscall.Getpid() }
