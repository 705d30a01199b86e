package shell

import (
	"fmt"
	"io"
	"time"
)

// meter draws a progress line on a terminal: redrawn in place at most
// five times a second, and cleared before the final count is printed.
// Off a terminal (on false) it draws nothing.
type meter struct {
	w     io.Writer
	on    bool
	start time.Time
	last  time.Time
}

// draw redraws the line, unless it was drawn less than 200 ms ago.
func (m *meter) draw(format string, args ...any) {
	if !m.on {
		return
	}
	now := time.Now()
	if now.Sub(m.last) < 200*time.Millisecond {
		return
	}
	m.last = now
	fmt.Fprintf(m.w, "\r\x1b[K"+format, args...)
}

// clear removes the line.
func (m *meter) clear() {
	if m.on {
		fmt.Fprint(m.w, "\r\x1b[K")
	}
}

func rate(n int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}

// eta is how long the rest of total takes at the rate done went, as
// "1:05" (minutes and seconds) or "2:03:10"; "" before there is a rate.
func eta(done, total int64, d time.Duration) string {
	if done <= 0 || total <= done || d <= 0 {
		return ""
	}
	left := time.Duration(float64(d) * float64(total-done) / float64(done)).Round(time.Second)
	h, m, s := int(left.Hours()), int(left.Minutes())%60, int(left.Seconds())%60
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// count writes n with a k or M suffix.
func count(n int64) string {
	switch {
	case n < 1e4:
		return fmt.Sprint(n)
	case n < 1e6:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}

// size writes a byte count in B, kB, MB or GB (powers of 1000).
func size(n int64) string {
	switch {
	case n < 1e3:
		return fmt.Sprintf("%d B", n)
	case n < 1e6:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1e9:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}
