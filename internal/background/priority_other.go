//go:build !linux

package background

import "errors"

func lowerPriority() {}

func threadNice() (int, error) { return 0, errors.New("thread priority is not supported here") }

func onMainThread() bool { return false }
