package lake

import (
	"context"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/flightd/flightd/internal/background"
)

// scanInFlight is how many decoded batches a task may hold ready for the caller.
const scanInFlight = 2

// scanTask is a unit of a scan's decoding: one file, or one merged bucket.
type scanTask interface {
	// next returns the task's next batch, nil at its end.
	next() (arrow.RecordBatch, error)
	// close frees what the task holds; next is not called after.
	close()
}

// scanItem is a decoded batch or the error that ended a task.
type scanItem struct {
	rec arrow.RecordBatch
	err error
}

// scanRun runs a scan's tasks. With one worker the caller's goroutine runs them in order.
// Otherwise workers take tasks in order; in order (the default) each task sends into its own
// channel, which the caller drains task after task, and a task starts only while fewer than
// 2 x workers tasks are started and not yet drained (so finished tasks cannot pile up). Unordered,
// every task sends into one channel.
type scanRun struct {
	tasks   []scanTask
	workers int
	ctx     context.Context // cancelled by stop
	parent  context.Context // the caller's
	cancel  context.CancelFunc

	// one worker
	cur int

	// workers
	outs    []chan scanItem // per task (ordered)
	shared  chan scanItem   // unordered
	slots   chan struct{}   // ordered: a slot per started, undrained task
	wg      sync.WaitGroup
	stopped bool
}

func scanWorkers(n int) int {
	if n > 0 {
		return n
	}
	return max(1, min(runtime.GOMAXPROCS(0), runtime.NumCPU()))
}

// startRun plans the tasks and starts the workers. The tasks read with r.ctx, which becomes
// the run's context (cancelled when the scan is released).
func (r *scanReader) startRun() *scanRun {
	ctx, cancel := context.WithCancel(r.ctx)
	run := &scanRun{parent: r.ctx, ctx: ctx, cancel: cancel}
	r.ctx = ctx
	run.tasks = r.tasks()
	if f := r.tune.Transform; f != nil {
		for i, t := range run.tasks {
			run.tasks[i] = transformTask{t, f}
		}
	}
	run.workers = min(scanWorkers(r.tune.Workers), max(1, len(run.tasks)))
	if run.workers == 1 {
		return run
	}
	if r.tune.Unordered {
		run.shared = make(chan scanItem, run.workers*scanInFlight)
		var next int
		var mu sync.Mutex
		run.wg.Add(run.workers)
		var workers sync.WaitGroup
		workers.Add(run.workers)
		for w := 0; w < run.workers; w++ {
			go func() {
				defer run.wg.Done()
				defer workers.Done()
				run.lower()
				for {
					mu.Lock()
					j := next
					next++
					mu.Unlock()
					if j >= len(run.tasks) || !run.do(run.tasks[j], run.shared) {
						return
					}
				}
			}()
		}
		run.wg.Add(1)
		go func() { // the end of the stream
			defer run.wg.Done()
			workers.Wait()
			close(run.shared)
		}()
		return run
	}
	run.outs = make([]chan scanItem, len(run.tasks))
	for j := range run.outs {
		run.outs[j] = make(chan scanItem, scanInFlight)
	}
	run.slots = make(chan struct{}, 2*run.workers)
	queue := make(chan int)
	run.wg.Add(1 + run.workers)
	go func() { // dispatch in order, a slot per task
		defer run.wg.Done()
		defer close(queue)
		for j := range run.tasks {
			select {
			case run.slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			select {
			case queue <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	for w := 0; w < run.workers; w++ {
		go func() {
			defer run.wg.Done()
			run.lower()
			for j := range queue {
				ok := run.do(run.tasks[j], run.outs[j])
				close(run.outs[j])
				if !ok {
					return
				}
			}
		}()
	}
	return run
}

// lower puts a worker of a long statement's scan on a lowered thread
// (background.LowPriority), so that short work gets the cores first.
func (run *scanRun) lower() {
	if background.LowPriority(run.parent) {
		background.LowerThread()
	}
}

// step decodes t's next batch; a long statement's steps run under
// background.Step, so that its decoding never holds more Ps than cores.
func (run *scanRun) step(t scanTask) (rec arrow.RecordBatch, err error) {
	if !background.LowPriority(run.parent) {
		return t.next()
	}
	background.Step(func() { rec, err = t.next() })
	return rec, err
}

// do runs task t into out (an error ends t); false when the run is stopping, so the worker quits.
func (run *scanRun) do(t scanTask, out chan<- scanItem) bool {
	defer t.close()
	for {
		rec, err := run.step(t)
		if err != nil {
			return run.send(out, scanItem{err: err})
		}
		if rec == nil {
			return true
		}
		if !run.send(out, scanItem{rec: rec}) {
			return false
		}
	}
}

func (run *scanRun) send(out chan<- scanItem, it scanItem) bool {
	select {
	case out <- it:
		return true
	case <-run.ctx.Done():
		if it.rec != nil {
			it.rec.Release()
		}
		return false
	}
}

// next returns the scan's next batch (nil at the end).
func (run *scanRun) next() (arrow.RecordBatch, error) {
	if run.stopped {
		return nil, nil
	}
	if run.workers == 1 {
		for run.cur < len(run.tasks) {
			if err := run.ctx.Err(); err != nil {
				return nil, run.ctxErr()
			}
			rec, err := run.step(run.tasks[run.cur])
			if err != nil || rec != nil {
				return rec, err
			}
			run.tasks[run.cur].close()
			run.cur++
		}
		return nil, nil
	}
	if run.shared != nil {
		select {
		case it, ok := <-run.shared:
			if !ok {
				return nil, run.ctxErr()
			}
			return it.rec, it.err
		case <-run.parent.Done():
			return nil, run.parent.Err()
		}
	}
	for run.cur < len(run.tasks) {
		select {
		case it, ok := <-run.outs[run.cur]:
			if ok {
				return it.rec, it.err
			}
			if err := run.ctxErr(); err != nil {
				return nil, err
			}
			run.cur++
			<-run.slots
		case <-run.parent.Done():
			return nil, run.parent.Err()
		}
	}
	return nil, nil
}

// ctxErr is the caller's context's error once the run is cancelled (the run is only cancelled
// by stop otherwise, after which next is not called).
func (run *scanRun) ctxErr() error {
	if run.ctx.Err() == nil {
		return nil
	}
	if err := run.parent.Err(); err != nil {
		return err
	}
	return context.Canceled
}

// stop cancels the workers, waits for them to quit and frees every batch not handed out.
func (run *scanRun) stop() {
	if run.stopped {
		return
	}
	run.stopped = true
	run.cancel()
	run.wg.Wait()
	drain := func(ch chan scanItem) {
		for {
			select {
			case it, ok := <-ch:
				if !ok {
					return
				}
				if it.rec != nil {
					it.rec.Release()
				}
			default:
				return
			}
		}
	}
	if run.shared != nil {
		for it := range run.shared { // closed once the workers quit
			if it.rec != nil {
				it.rec.Release()
			}
		}
	}
	for _, ch := range run.outs {
		drain(ch)
	}
	if run.workers == 1 {
		for ; run.cur < len(run.tasks); run.cur++ {
			run.tasks[run.cur].close()
		}
	}
}

// transformTask is a task whose batches go through ScanTuning.Transform.
type transformTask struct {
	scanTask
	f func(arrow.RecordBatch) (arrow.RecordBatch, error)
}

func (t transformTask) next() (arrow.RecordBatch, error) {
	for {
		rec, err := t.scanTask.next()
		if err != nil || rec == nil {
			return rec, err
		}
		out, err := t.f(rec)
		rec.Release()
		if err != nil || out != nil {
			return out, err
		}
	}
}
