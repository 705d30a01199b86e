package tiering

import (
	"time"

	"github.com/flightd/flightd/lakestream"
)

// Backoff of a failing table (see doc.go, Scheduling): the first retry
// after firstBackoff, each next one after twice the wait before, at most
// the table's freshness interval.
const firstBackoff = 100 * time.Millisecond

// backoffAfter is the wait after the n-th consecutive failed round (n >= 1)
// of a table tiered every interval.
func backoffAfter(n int, every time.Duration) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 40 { // firstBackoff << 40 is years
		return every
	}
	return min(firstBackoff<<(n-1), every)
}

// roundDone records the outcome of a round of t for sys.tiering
// (lakestream.RoundStatus): a failed round counts, and its error is the
// last; a round that succeeds clears both.
func (s *Service) roundDone(id string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.health[id]
	if err == nil {
		st = lakestream.RoundStatus{}
	} else {
		st.FailedRounds++
		st.LastError = err.Error()
		st.RetryAt = time.Time{} // the scheduler sets it (retryAt)
	}
	s.setHealth(id, st)
}

// retryAt records when the scheduler tries a failing table again.
func (s *Service) retryAt(id string, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.health[id]
	if st.FailedRounds == 0 {
		return
	}
	st.RetryAt = at
	s.setHealth(id, st)
}

// forgetHealth drops what is known of a table the scheduler forgot.
func (s *Service) forgetHealth(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setHealth(id, lakestream.RoundStatus{})
}

// setHealth stores st; the caller holds s.mu.
func (s *Service) setHealth(id string, st lakestream.RoundStatus) {
	if st == (lakestream.RoundStatus{}) {
		delete(s.health, id)
	} else {
		s.health[id] = st
	}
	s.ls.SetRoundStatus(id, st)
}
