package store_test

import (
	"testing"

	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// TestIOBytesOnlyFromCallsThatMoveBytes: accept and accept4 return a new fd,
// connect 0; neither is bytes moved, streamed or summed by the kernel into
// syscall_totals (which adds every positive return).
func TestIOBytesOnlyFromCallsThatMoveBytes(t *testing.T) {
	path := storetest.ByteCalls(t)
	rec, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	want := map[string]uint64{"accept": 0, "accept4": 0, "connect": 0, "recvfrom": 100, "sendto": 50, "read": 4096}
	rows, err := rec.DB.Query("SELECT name, sum(bytes)::UBIGINT FROM io GROUP BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n uint64
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		if n != want[name] {
			t.Errorf("io: %s moved %d bytes, want %d", name, n, want[name])
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("io: no rows for %v", want)
	}
	var n uint64
	if err := rec.DB.QueryRow("SELECT sum(bytes)::UBIGINT FROM syscall_totals WHERE name = 'accept4'").Scan(&n); err != nil || n != 0 {
		t.Errorf("syscall_totals: accept4 moved %d bytes (%v), want 0", n, err)
	}
}
