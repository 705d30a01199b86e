package tiering

import "time"

// Clock is the time the scheduler (Run) runs on: Options.Clock, by
// default the system's. Rounds themselves are timed on the system clock.
type Clock interface {
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
