package capture

import (
	"errors"

	"github.com/cilium/ebpf"
)

// Reading a hash map an element at a time costs two bpf() calls per entry
// (next key, then lookup), three when each is also deleted; a drain runs
// every second over every thread of the target, and a build has thousands.
// Batch operations read a few hundred entries per call. Kernels without them
// (before 5.6) are read an element at a time.

const mapBatch = 256

// readMap calls got for every entry of m, with *val filled, in batches.
// del takes each batch out of the map as it is read: the kernel reads and
// deletes under the bucket's lock, so a count added meanwhile is either in
// the batch or left in the map, never lost. It returns false when the pass
// did not see the whole map.
func readMap[K any, V any](m *ebpf.Map, del bool, got func(k *K, v *V)) bool {
	keys, vals := make([]K, mapBatch), make([]V, mapBatch)
	var cursor ebpf.MapBatchCursor
	for first := true; ; first = false {
		var n int
		var err error
		if del {
			n, err = m.BatchLookupAndDelete(&cursor, keys, vals, nil)
		} else {
			n, err = m.BatchLookup(&cursor, keys, vals, nil)
		}
		for i := range n {
			got(&keys[i], &vals[i])
		}
		switch {
		case errors.Is(err, ebpf.ErrKeyNotExist):
			return true // the end
		case err != nil && first && n == 0:
			// No batch operations in this kernel for this map (or a
			// bucket larger than a batch): one at a time.
			return readMapEach(m, del, got)
		case err != nil:
			return false
		}
	}
}

// readMapEach is readMap an element at a time: keys first, then each one
// looked up (and deleted, with del) atomically.
func readMapEach[K any, V any](m *ebpf.Map, del bool, got func(k *K, v *V)) bool {
	var k K
	var v V
	var keys []K
	it := m.Iterate()
	for it.Next(&k, &v) {
		if !del {
			got(&k, &v)
			continue
		}
		keys = append(keys, k)
	}
	for i := range keys {
		if m.LookupAndDelete(&keys[i], &v) == nil {
			got(&keys[i], &v)
		}
	}
	return it.Err() == nil
}
