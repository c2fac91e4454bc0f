package watch

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// The hand-off carries every kind of event whole: what the writer child
// stores is what the watch kept (a socket's addresses, a wait's stack, a
// request's first bytes), with the incident's metadata and lost counts.
func TestHandoffRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "incident.db")
	meta := map[string]string{
		"clock_offset_ns": "0", "start_mono": "1000", "start_wall": "2026-11-24T00:00:00Z", "level": "default",
		"trigger": "stall", "trigger_pid": "7",
	}
	sock := event.FileRef{Dev: 8, Ino: 99, Kind: event.KindSocketInet}
	events := []event.Event{
		&event.Exec{Header: event.Header{Time: 1000, PID: 7, TID: 7, Comm: "app"}, Filename: "/bin/app", Args: []string{"app", "-x"}},
		&event.File{Header: event.Header{Time: 1100, PID: 7, TID: 7}, Ref: sock,
			Local: netip.MustParseAddrPort("127.0.0.1:80"), Peer: netip.MustParseAddrPort("127.0.0.1:5555")},
		&event.OffCPU{Header: event.Header{Time: 5000, PID: 7, TID: 7, Comm: "app"}, Off: 3000, State: 'D',
			Reason: event.ReasonDiskWrite, Stack: []string{"io_schedule", "folio_wait_bit"}, Syscall: 1, StackID: 3},
		&event.Payload{Header: event.Header{Time: 1200, PID: 7, TID: 7}, Conn: sock, Data: []byte("GET / HTTP/1.1\r\n")},
		// A container's limits: the readings a throttled or uninterruptible
		// wait makes due (a window holding one was refused by gob).
		&event.CPUQuota{Header: event.Header{Time: 1300, PID: 7, TID: 7}, Phase: event.QuotaFirst, Cgroup: "/box",
			Version: "v1", QuotaUS: 20000, PeriodUS: 100000, Periods: 10, Throttled: 4, ThrottledNS: 900},
		&event.CPUQuota{Header: event.Header{Time: 6000}, Phase: event.QuotaEnd, Cgroup: "/box",
			Version: "v1", QuotaUS: 20000, PeriodUS: 100000, Periods: 40, Throttled: 30, ThrottledNS: 9900},
		&event.MemoryLimit{Header: event.Header{Time: 1300, PID: 7, TID: 7}, Phase: event.QuotaFirst, Cgroup: "/box",
			Version: "v1", LimitBytes: 64 << 20},
		&event.IOLimit{Header: event.Header{Time: 1300, PID: 7, TID: 7}, Cgroup: "/box", Version: "v1", Dev: 7<<20 | 3, ReadBPS: 1 << 20},
	}
	var pipe bytes.Buffer
	if err := encodeHandoff(&pipe, handoffHeader{Path: path, Meta: meta, Lost: map[string]uint64{"offcpu": 2}}, events); err != nil {
		t.Fatal(err)
	}
	if err := WriteRecording(&pipe); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("incident recording: %v %v", err, st.Mode())
	}
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	for q, want := range map[string]string{
		"SELECT count(*) FROM offcpu WHERE off_ns = 3000":                         "1",
		"SELECT peer FROM files WHERE ino = 99":                                   "127.0.0.1:5555",
		"SELECT CAST(data AS VARCHAR) FROM payloads":                              "GET / HTTP/1.1\\x0D\\x0A",
		"SELECT value FROM meta WHERE key = 'trigger'":                            "stall",
		"SELECT CAST(sum(count) AS VARCHAR) FROM lost WHERE source = 'offcpu'":    "2",
		"SELECT CAST(max(throttled) - min(throttled) AS VARCHAR) FROM cpu_quotas": "26",
		"SELECT CAST(limit_bytes AS VARCHAR) FROM memory_limits":                  "67108864",
		"SELECT CAST(read_bps AS VARCHAR) FROM io_limits":                         "1048576",
	} {
		var got string
		if err := rec.DB.QueryRow(q).Scan(&got); err != nil || got != want {
			t.Errorf("%s: %q (%v), want %q", q, got, err, want)
		}
	}
}
