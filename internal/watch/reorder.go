package watch

import (
	"container/heap"
	"time"

	"github.com/whyslow/whyslow/internal/event"
)

// inOrder hands serving the socket calls and first bytes in the order
// they happened. They do not arrive so: with the per-call hooks each CPU
// has its own ring of calls (bpf/whyslow.bpf.c, calls), read on its own,
// so a server thread that moved between CPUs has its read and its answer
// in two rings, delivered up to a flush period apart and in either order.
// Taken as they came, an answer seen before its request's read made a
// request "answered after 18446744073.71 s" and the watch fired on it.
// Events are held until reorderDelay has passed beyond them (every ring is
// read at least that often), then handed on sorted by time; a request is
// judged unanswered only up to that point.
type inOrder struct {
	s    *serving
	held timeHeap
	seq  uint64
}

// reorderDelay: how long an event waits for earlier ones from other rings.
// Each ring is read at least every 50 ms (capture's batchWait); five of
// those leave room for a reader that falls behind.
const reorderDelay = uint64(250 * time.Millisecond)

func newInOrder(over uint64) *inOrder { return &inOrder{s: newServing(over)} }

// add holds a socket call or a payload; other events are none of its.
func (o *inOrder) add(ev event.Event) {
	var at uint64
	switch v := ev.(type) {
	case *event.Syscall:
		k := v.File.Kind
		if (k != event.KindSocketInet && k != event.KindSocketUnix) || v.Ret <= 0 || direction(v.Nr) == 0 {
			return
		}
		at = v.Time + v.Dur // serving reads a call at its return
	case *event.Payload:
		at = v.Time
	default:
		return
	}
	o.seq++
	heap.Push(&o.held, held{at: at, seq: o.seq, ev: ev})
}

// release hands on, in time order, what was held long enough by now, and
// returns the triggers that fired.
func (o *inOrder) release(now uint64) []*Trigger {
	var out []*Trigger
	for len(o.held) > 0 && o.held[0].at+reorderDelay <= now {
		h := heap.Pop(&o.held).(held)
		switch v := h.ev.(type) {
		case *event.Syscall:
			if t := o.s.call(v); t != nil {
				out = append(out, t)
			}
		case *event.Payload:
			o.s.payload(v)
		}
	}
	return out
}

// slow releases what is due and lists the requests unanswered past the
// threshold as of reorderDelay before now: a later answer may still be on
// its way.
func (o *inOrder) slow(now uint64) []*Trigger {
	out := o.release(now)
	if now > reorderDelay {
		out = append(out, o.s.slow(now-reorderDelay)...)
	}
	return out
}

func (o *inOrder) unanswered(pid uint32, begin uint64) bool { return o.s.unanswered(pid, begin) }

func (o *inOrder) forget(before uint64) { o.s.forget(before) }

// held is an event waiting for its turn; seq keeps arrival order among
// events of the same time.
type held struct {
	at, seq uint64
	ev      event.Event
}

type timeHeap []held

func (h timeHeap) Len() int { return len(h) }
func (h timeHeap) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h timeHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timeHeap) Push(x any)   { *h = append(*h, x.(held)) }
func (h *timeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
