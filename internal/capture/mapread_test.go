package capture

import (
	"testing"

	"github.com/cilium/ebpf"
)

// readMap sees every entry of a map larger than one batch, once, and with
// del leaves it empty; the element-at-a-time fallback agrees.
func TestReadMapBatches(t *testing.T) {
	requirePrivileges(t)
	const n = 3*mapBatch + 17
	for _, tc := range []struct {
		name string
		read func(m *ebpf.Map, del bool, got func(k *uint32, v *uint64)) bool
	}{
		{"batches", readMap[uint32, uint64]},
		{"one at a time", readMapEach[uint32, uint64]},
	} {
		for _, del := range []bool{false, true} {
			m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: 4096})
			if err != nil {
				t.Fatal(err)
			}
			for k := uint32(1); k <= n; k++ {
				if err := m.Put(k, uint64(k)*10); err != nil {
					t.Fatal(err)
				}
			}
			seen := map[uint32]uint64{}
			complete := tc.read(m, del, func(k *uint32, v *uint64) {
				if _, dup := seen[*k]; dup {
					t.Errorf("%s, del %v: key %d seen twice", tc.name, del, *k)
				}
				seen[*k] = *v
			})
			if !complete || len(seen) != n {
				t.Errorf("%s, del %v: complete %v, %d entries seen, want %d", tc.name, del, complete, len(seen), n)
			}
			for k, v := range seen {
				if v != uint64(k)*10 {
					t.Errorf("%s, del %v: key %d has %d, want %d", tc.name, del, k, v, k*10)
				}
			}
			var k uint32
			var v uint64
			left := 0
			for it := m.Iterate(); it.Next(&k, &v); {
				left++
			}
			if want := map[bool]int{false: n, true: 0}[del]; left != want {
				t.Errorf("%s, del %v: %d entries left in the map, want %d", tc.name, del, left, want)
			}
			m.Close()
		}
	}
}
