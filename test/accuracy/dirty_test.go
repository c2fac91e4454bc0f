package accuracy

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// dirtyLimits are the machine's dirty page limits as the test found them,
// restored after each program that ran under small ones and at the end.
type dirtyLimits struct {
	saved   map[string]string // vm.dirty_* name -> value
	changed bool              // set since the last restore
}

var dirtyNames = []string{"dirty_bytes", "dirty_background_bytes", "dirty_ratio", "dirty_background_ratio"}

func saveDirtyLimits(t *testing.T) *dirtyLimits {
	t.Helper()
	d := &dirtyLimits{saved: map[string]string{}}
	for _, n := range dirtyNames {
		b, err := os.ReadFile("/proc/sys/vm/" + n)
		if err != nil {
			t.Fatal(err)
		}
		d.saved[n] = strings.TrimSpace(string(b))
	}
	t.Cleanup(func() { d.restore(t) })
	return d
}

// set makes the limits these bytes.
func (d *dirtyLimits) set(t *testing.T, bytes, background int64) {
	t.Helper()
	d.changed = true
	writeSysctl(t, "dirty_background_bytes", background)
	writeSysctl(t, "dirty_bytes", bytes)
}

// restore puts the limits back as they were, if set changed them. Writing
// one of a pair zeroes its twin (dirty_bytes and dirty_ratio), so the
// ratios go first, and a zero, the form not in use, is not written.
func (d *dirtyLimits) restore(t *testing.T) {
	t.Helper()
	if !d.changed {
		return
	}
	for _, n := range []string{"dirty_background_ratio", "dirty_ratio", "dirty_background_bytes", "dirty_bytes"} {
		if v := d.saved[n]; v != "0" {
			if err := os.WriteFile("/proc/sys/vm/"+n, []byte(v), 0o644); err != nil {
				t.Errorf("restoring vm.%s=%s: %v", n, v, err)
			}
		}
	}
	d.changed = false
}

func writeSysctl(t *testing.T, name string, v int64) {
	t.Helper()
	if err := os.WriteFile("/proc/sys/vm/"+name, []byte(strconv.FormatInt(v, 10)), 0o644); err != nil {
		t.Fatalf("setting vm.%s: %v", name, err)
	}
}
