package explain

import (
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestPollForWorkByThreadsMovingData: in a process that serves, a poll its
// own timeout ended is a wait for work only in a thread that moved no
// socket data; a thread that moved data, after its poll or in another call
// at another time, was in a conversation. Threads that did not poll move
// data too (the workers), and change nothing.
func TestPollForWorkByThreadsMovingData(t *testing.T) {
	listen := event.FileRef{Dev: 9, Ino: 400, Kind: event.KindSocketInet}
	conn := event.FileRef{Dev: 9, Ino: 401, Kind: event.KindSocketInet}
	r := storetest.New(t, "movers", map[string]string{"scope": "pid", "command": "srv",
		"target_pid": "2000", "target_start_mono": strconv.FormatUint(storetest.At(0), 10),
		"target_end_mono": strconv.FormatUint(storetest.At(1000), 10), "duration_ns": strconv.FormatUint(storetest.MS(1000), 10)})
	acceptor := storetest.Thread{PID: 2000, TID: 2000, Comm: "srv"}
	idle := storetest.Thread{PID: 2000, TID: 2001, Comm: "srv"}
	worker := storetest.Thread{PID: 2000, TID: 2002, Comm: "srv"}
	timedOut := func(th storetest.Thread, from, to float64) *event.OffCPU {
		o := r.Off(th, from, to, event.ReasonSleep, "epoll_wait", storetest.Thread{}, 0)
		o.WakerSyscall = event.WakerTimer
		return o
	}
	r.Add(acceptor.Blocked("accept4", 0, 100, 3, 5, listen),
		r.Off(acceptor, 1, 99, event.ReasonNetwork, "accept4", storetest.Thread{}, 0),
		acceptor.Blocked("epoll_wait", 200, 100, 4, 0, event.FileRef{}), timedOut(acceptor, 201, 299),
		acceptor.Call("recvfrom", 310, 0.05, 5, 64, conn),
		idle.Blocked("epoll_wait", 200, 200, 4, 0, event.FileRef{}), timedOut(idle, 201, 399),
		worker.Call("sendto", 150, 0.05, 5, 64, conn))
	for i := range 50 { // the worker's conversation, many calls that are no poll's
		r.Add(worker.Call("recvfrom", 500+float64(i), 0.05, 5, 64, conn))
	}
	rec, err := store.Open(r.Close())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	s := storetest.Held(t, NewSource(rec).Hold)
	if err := s.TargetWaits([]uint32{2000}, s.Window()); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Query("SELECT tid, for_work FROM target_offcpu WHERE syscall = 'epoll_wait'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[uint32]bool{}
	for rows.Next() {
		var tid uint32
		var forWork bool
		if err := rows.Scan(&tid, &forWork); err != nil {
			t.Fatal(err)
		}
		got[tid] = forWork
	}
	if want := map[uint32]bool{acceptor.TID: false, idle.TID: true}; len(got) != 2 || got[acceptor.TID] != want[acceptor.TID] || got[idle.TID] != want[idle.TID] {
		t.Errorf("the polls' for_work by thread %v, want %v", got, want)
	}
}
