package explain

import (
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestDispatchedReads: a disk read a kernel worker issued is the target's
// when it read that file (tid: its thread with the longest wait to read it)
// and the read was inserted between the target's first and last wait to
// read it; not a write, not another file's read, not one outside that
// time, not one another process or the target itself issued.
func TestDispatchedReads(t *testing.T) {
	const disk = uint32(254 << 20)
	fs := disk + 1
	f := event.FileRef{Dev: fs, Ino: 12, Gen: 1, Kind: event.KindRegular}
	other := event.FileRef{Dev: fs, Ino: 13, Gen: 1, Kind: event.KindRegular}
	r := storetest.New(t, "dispatched", map[string]string{"scope": "command", "command": "sha256sum",
		"target_pid": "1000", "target_start_mono": strconv.FormatUint(storetest.At(0), 10),
		"target_end_mono": strconv.FormatUint(storetest.At(1000), 10), "duration_ns": strconv.FormatUint(storetest.MS(1000), 10),
		"exit_code": "0"})
	main := storetest.Thread{PID: 1000, TID: 1000, Comm: "sha256sum"}
	helper := storetest.Thread{PID: 1000, TID: 1001, Comm: "sha256sum"}
	kworker := storetest.Thread{PID: 50, TID: 50, Comm: "kworker/u8:1"}
	journal := storetest.Thread{PID: 60, TID: 60, Comm: "jbd2/vdb1-8"}
	r.Device(storetest.Device{Dev: disk, Name: "vdb"})
	// The target waits to read f from 100 to 650 ms; the helper longest.
	r.Add(main.Blocked("read", 100, 200, 3, 4096, f), helper.Blocked("read", 350, 300, 4, 4096, f),
		main.Blocked("read", 500, 100, 3, 4096, f), main.Call("read", 700, 0.01, 5, 100, other))
	// Each request completes 10 ms after it was inserted.
	r.Add(storetest.Block(kworker, 210, 5, 5, disk, event.BlockRead, 8192, 100, f), // the target's
		storetest.Block(kworker, 710, 5, 5, disk, event.BlockRead, 4096, 200, f), // after its last wait
		storetest.Block(kworker, 210, 5, 5, disk, event.BlockRead, 4096, 300, other),
		storetest.Block(kworker, 310, 5, 5, disk, event.BlockWrite, 4096, 400, f),
		storetest.Block(journal, 310, 5, 5, disk, event.BlockRead, 4096, 500, f),
		storetest.Block(main, 410, 5, 5, disk, event.BlockRead, 4096, 600, f))
	rec, err := store.Open(r.Close())
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	s := storetest.Held(t, NewSource(rec).Hold)
	if err := s.TargetWaits([]uint32{1000}, s.Window()); err != nil {
		t.Fatal(err)
	}
	if err := s.run("target_dispatched_reads"); err != nil {
		t.Fatal(err)
	}
	rows, err := s.Query("SELECT tid, fdev, ino, insert_ts, bytes FROM target_dispatched_reads")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var tid, fdev, bytes uint32
		var ino, insert uint64
		if err := rows.Scan(&tid, &fdev, &ino, &insert, &bytes); err != nil {
			t.Fatal(err)
		}
		got = append(got, strconv.Itoa(int(tid))+" "+strconv.Itoa(int(fdev))+":"+strconv.Itoa(int(ino))+
			" at "+strconv.FormatUint(insert, 10)+" "+strconv.Itoa(int(bytes)))
	}
	want := "1001 " + strconv.Itoa(int(fs)) + ":12 at " + strconv.FormatUint(storetest.At(200), 10) + " 8192"
	if len(got) != 1 || got[0] != want {
		t.Errorf("target_dispatched_reads %q, want [%s]", got, want)
	}
}
