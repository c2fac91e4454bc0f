package export

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/store/storetest/hostile"
)

// folded parses folded lines into stack -> microseconds.
func folded(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if i < 0 || err != nil {
			t.Fatalf("not a folded line: %q", line)
		}
		m[line[:i]] += n
	}
	return m
}

func TestFoldedOffCPUByReason(t *testing.T) {
	_, src := fixture(t)
	stacks, err := reports.Stacks(src.Source, reports.StackOptions{OffCPU: true})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Folded(&b, stacks, FoldedOptions{ByReason: true}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\r\u202e") {
		t.Fatalf("a thread name reached the output raw: %q", b.String())
	}
	got := folded(t, b.String())
	worker := `server (100);<img src=x>:\x1b[31m\u{202e} (101)`
	for stack, want := range map[string]uint64{
		worker + ";[disk-write];ksys_write;vfs_write;ext4_write_begin;folio_wait_bit_common;io_schedule": hostile.DiskWriteNS / 1000,
		worker + ";[dirty-throttle];ksys_write;vfs_write;balance_dirty_pages;schedule_timeout":           hostile.ThrottleNS / 1000,
		"server (100);server (100);[sleep];do_nanosleep;hrtimer_nanosleep":                               hostile.SleepNS / 1000,
		"server (100);server (100);[runqueue];[no kernel stack]":                                         20000,
	} {
		if got[stack] != want {
			t.Errorf("%s: %d us, want %d (all: %v)", stack, got[stack], want, got)
		}
	}
	// Every microsecond off CPU in the recording is in some line.
	var total, recorded uint64
	for _, v := range got {
		total += v
	}
	if err := src.DB.QueryRow("SELECT (sum(off_ns) / 1000)::UBIGINT FROM offcpu").Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if total != recorded {
		t.Errorf("folded total %d us, recording %d us", total, recorded)
	}
}

func TestFoldedOnCPUHasNoInventedStacks(t *testing.T) {
	_, src := fixture(t)
	stacks, err := reports.Stacks(src.Source, reports.StackOptions{OnCPU: true, PIDs: []uint32{hostile.PID}})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Folded(&b, stacks, FoldedOptions{}); err != nil {
		t.Fatal(err)
	}
	got := folded(t, b.String())
	want := map[string]uint64{
		"server (100);server (100);[on-cpu]":                       hostile.MainOnCPUNS / 1000,
		`server (100);<img src=x>:\x1b[31m\u{202e} (101);[on-cpu]`: hostile.WorkerOnCPUNS / 1000,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d, want %d", k, got[k], v)
		}
	}
}
