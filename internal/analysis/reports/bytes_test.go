package reports

import (
	"testing"

	"github.com/whyslow/whyslow/internal/analysis/source"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestBytesAgreeWithTheIOView: the io view and every analysis that sums
// syscalls' bytes on its own (usage, whose words explain shares; the size
// filter; top and log) count the same bytes: accept and connect move none,
// streamed or summed in the kernel.
func TestBytesAgreeWithTheIOView(t *testing.T) {
	rec, err := store.Open(storetest.ByteCalls(t))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	s := storetest.Held(t, source.New(rec).Hold)
	if err := usageCalls(s, source.NoFilter()); err != nil {
		t.Fatal(err)
	}
	where, args := whereOf(source.NoFilter(), rawCols)
	for _, q := range []string{
		"SELECT name, sum(bytes) FROM io GROUP BY name",
		"SELECT name, sum(bytes) FROM usage_io GROUP BY name",
		"SELECT n.name, sum(" + rawCols.size + ") FROM syscall_raw JOIN syscall_names n USING (nr) WHERE " + where + " GROUP BY n.name",
	} {
		want := map[string]int64{"accept": 0, "accept4": 0, "connect": 0, "recvfrom": 100, "sendto": 50, "read": 4096}
		rows, err := s.Query(q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		for rows.Next() {
			var name string
			var n int64
			if err := rows.Scan(&name, &n); err != nil {
				t.Fatal(err)
			}
			if n != want[name] {
				t.Errorf("%s: %s moved %d bytes, want %d", q, name, n, want[name])
			}
		}
		rows.Close()
	}
	ops, err := RunLog(s, source.NoFilter(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ops {
		if (o.Syscall == "accept" || o.Syscall == "connect") && o.Size != nil {
			t.Errorf("log: %s has a size, %d", o.Syscall, *o.Size)
		}
	}
}
