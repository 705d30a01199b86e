package memguard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/flightd/flightd/engine"
)

// A model check: random memory readings and statement starts and ends. A
// statement is cancelled only when a reading above the armed level follows
// its start, exactly then; the level is the ceiling, and after a cut the
// reading plus an eighth of the ceiling until a reading at or under the
// ceiling.
func TestGuardAgainstModel(t *testing.T) {
	const ceiling = 800
	var rss int64
	g := New(ceiling, func() int64 { return rss })
	type stmt struct {
		ctx       context.Context
		done      func()
		cancelled bool // by the model
	}
	var live []*stmt
	armed := int64(ceiling)
	seed := uint64(1)
	rnd := func(n int) int { seed = seed*6364136223846793005 + 1442695040888963407; return int(seed>>33) % n }
	cuts := 0
	for step := 0; step < 20000; step++ {
		switch rnd(3) {
		case 0:
			ctx, done := g.Start(context.Background())
			live = append(live, &stmt{ctx: ctx, done: done})
		case 1:
			if len(live) > 0 {
				i := rnd(len(live))
				live[i].done()
				live[i].done() // twice is harmless
				require.Error(t, live[i].ctx.Err())
				if !live[i].cancelled {
					require.NotErrorIs(t, context.Cause(live[i].ctx), ErrOverMemory)
				}
				live = append(live[:i], live[i+1:]...)
			}
		case 2:
			rss = int64(rnd(1200))
			crossed, n, _ := g.Check()
			want := rss > armed
			require.Equal(t, want, crossed, "rss %d armed %d", rss, armed)
			switch {
			case rss <= ceiling:
				armed = ceiling
			case want:
				cuts++
				armed = rss + ceiling/8
				require.Equal(t, countUncancelled(live, func(s *stmt) bool { return s.cancelled }), n)
				for _, s := range live {
					s.cancelled = true
				}
			}
		}
		for _, s := range live {
			if s.cancelled {
				require.ErrorIs(t, context.Cause(s.ctx), ErrOverMemory)
				require.ErrorIs(t, context.Cause(s.ctx), engine.ErrExhausted)
			} else {
				require.NoError(t, s.ctx.Err())
			}
		}
	}
	require.Greater(t, cuts, 100)
}

func countUncancelled[T any](xs []T, cancelled func(T) bool) int {
	n := 0
	for _, x := range xs {
		if !cancelled(x) {
			n++
		}
	}
	return n
}

func TestGuardOffAndResident(t *testing.T) {
	g := New(0, func() int64 { return 1 << 40 })
	ctx, done := g.Start(context.Background())
	done()
	crossed, _, _ := g.Check()
	require.False(t, crossed)
	require.False(t, errors.Is(context.Cause(ctx), ErrOverMemory))
	require.Positive(t, ResidentBytes())
}

// A spill guard measures the files under its directory (subdirectories
// included) and cancels with ErrOverSpill, naming --max-spill.
func TestSpillGuardCancelsOverItsBound(t *testing.T) {
	dir := t.TempDir()
	g := NewSpill(1000, dir)
	ctx, done := g.Start(context.Background())
	defer done()
	crossed, _, size := g.Check()
	require.False(t, crossed)
	require.Zero(t, size)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.tmp"), make([]byte, 600), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "b.tmp"), make([]byte, 600), 0o644))
	require.EqualValues(t, 1200, DirBytes(dir))
	crossed, n, _ := g.Check()
	require.True(t, crossed)
	require.Equal(t, 1, n)
	require.ErrorIs(t, context.Cause(ctx), ErrOverSpill)
	require.ErrorIs(t, context.Cause(ctx), engine.ErrExhausted)
	require.ErrorContains(t, context.Cause(ctx), "--max-spill")
	require.Zero(t, DirBytes(filepath.Join(dir, "missing")))
}
