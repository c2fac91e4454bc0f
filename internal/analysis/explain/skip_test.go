package explain

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// shortCommand is `whyslow run -- true` as the default level records it: an
// exec, a CPU sample in it, its CPU time and exit, and another process's
// disk request while it ran. It never went off CPU, unless preempted (as
// on a busy host): then it waited for a CPU once, no call streamed.
func shortCommand(t *testing.T, preempted bool) string {
	name := "short-command"
	if preempted {
		name = "preempted-command"
	}
	r := storetest.New(t, name, map[string]string{"level": "waits", "scope": "command", "command": "true",
		"target_pid": "100", "target_start_mono": strconv.FormatUint(storetest.At(1), 10),
		"target_end_mono": strconv.FormatUint(storetest.At(5), 10), "duration_ns": strconv.FormatUint(storetest.MS(6), 10),
		"exit_code": "0", "dirty_at_exit": "4096"})
	tr := storetest.Thread{PID: 100, TID: 100, Comm: "true"}
	other := storetest.Thread{PID: 200, TID: 200, Comm: "jbd2/vda-8"}
	nvme := uint32(259 << 20)
	r.Device(storetest.Device{Dev: nvme, Name: "nvme0n1"})
	r.Add(&event.Exec{Header: tr.At(1), PPID: 1, Filename: "/usr/bin/true", Args: []string{"true"}},
		&event.Sample{Header: tr.At(2), Syscall: 59, FD: -1, StackID: -1},
		storetest.Block(other, 3, 0.1, 0.5, nvme, event.BlockOp(1), 4096, 8, event.FileRef{Dev: nvme, Ino: 77, Kind: event.KindRegular}),
		&event.CPUTime{Header: tr.At(4), OnCPU: storetest.MS(1)},
		&event.Exit{Header: tr.At(4.5), GroupDead: true})
	if preempted {
		r.Add(r.Off(tr, 2.5, 3.5, event.ReasonRunqueue, "", other, 1))
	}
	return r.Close()
}

// TestSkippedStepsChangeNothing: the steps Explain skips on empty input
// would have found nothing, on every story and on a short command's
// recording (where most steps are skipped).
func TestSkippedStepsChangeNothing(t *testing.T) {
	paths := map[string]string{"short-command": shortCommand(t, false), "preempted-command": shortCommand(t, true)}
	for _, st := range storetest.Stories {
		paths[st.Name] = st.Record(t)
	}
	for name, path := range paths {
		var got [2]string
		for i, every := range []bool{false, true} {
			rec, err := store.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			s := NewSource(rec)
			s.EveryStep = every
			pid, _ := strconv.Atoi(s.Meta["target_pid"])
			x, err := Explain(s, uint32(pid))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b, _ := json.Marshal(x)
			got[i] = storetest.RoundFloats(string(b))
			rec.Close()
		}
		if got[0] != got[1] {
			t.Errorf("%s: skipping steps changed the explanation:\n%s\nwith every step:\n%s", name, got[0], got[1])
		}
	}
}

// TestEmptyTablesShape: each table made empty for a recording without its
// input (a target that never went off CPU, no disk request, no call) has
// the shape its query gives it. TargetWaits makes target_offcpu by its
// query; the others are made by theirs, then by their empty statement.
func TestEmptyTablesShape(t *testing.T) {
	for _, table := range []string{"target_offcpu", "target_dispatched_reads", "target_calls"} {
		t.Run(table, func(t *testing.T) {
			rec, err := store.Open(storetest.Stories[0].Record(t))
			if err != nil {
				t.Fatal(err)
			}
			defer rec.Close()
			s := storetest.Held(t, NewSource(rec).Hold)
			if err := s.TargetWaits([]uint32{1000}, s.Window()); err != nil {
				t.Fatal(err)
			}
			if table != "target_offcpu" {
				if err := s.run(table); err != nil {
					t.Fatal(err)
				}
			}
			want := tableShape(t, s, table)
			if err := s.run(table + "_empty"); err != nil {
				t.Fatal(err)
			}
			if got := tableShape(t, s, table); got != want {
				t.Errorf("%s_empty makes\n%s\nthe query makes\n%s", table, got, want)
			}
		})
	}
}

// tableShape is a table's columns and their types, in order.
func tableShape(t *testing.T, s *Source, table string) string {
	t.Helper()
	rows, err := s.Query("SELECT column_name, column_type FROM (DESCRIBE " + table + ")")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out string
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			t.Fatal(err)
		}
		out += name + " " + typ + ", "
	}
	return out
}

// A disk request completed without ever being issued, as recordings made
// before the kernel side gave it its insert time hold it (issue time 0),
// is explained as waiting at the device: its queue time overflowed.
func TestNeverIssuedRequest(t *testing.T) {
	r := storetest.New(t, "never-issued", map[string]string{"level": "waits", "scope": "command", "command": "true",
		"target_pid": "100", "target_start_mono": strconv.FormatUint(storetest.At(1), 10),
		"target_end_mono": strconv.FormatUint(storetest.At(5), 10), "duration_ns": strconv.FormatUint(storetest.MS(6), 10),
		"exit_code": "0"})
	tr := storetest.Thread{PID: 100, TID: 100, Comm: "true"}
	other := storetest.Thread{PID: 200, TID: 200, Comm: "sync"}
	nvme := uint32(259 << 20)
	r.Device(storetest.Device{Dev: nvme, Name: "nvme0n1"})
	flush := storetest.Block(other, 3, 0, 2, nvme, event.BlockOp(1), 0, 0, event.FileRef{})
	flush.IssueTime = 0
	r.Add(&event.Exec{Header: tr.At(1), PPID: 1, Filename: "/usr/bin/true", Args: []string{"true"}},
		flush,
		&event.CPUTime{Header: tr.At(4), OnCPU: storetest.MS(1)},
		&event.Exit{Header: tr.At(4.5), GroupDead: true})
	x := explainRecorded(t, r.Close(), 100)
	if len(x.Devices) != 1 || x.Devices[0].QueueMS != 0 || x.Devices[0].ServiceMS < 1.9 || x.Devices[0].ServiceMS > 2.1 {
		t.Errorf("devices: %+v, want one with 0 ms queued and 2 ms at the device", x.Devices)
	}
}
