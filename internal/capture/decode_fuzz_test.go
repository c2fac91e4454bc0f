package capture

import (
	"encoding/binary"
	"testing"
)

// FuzzDecode: a ring record is bytes the kernel wrote, but decoding must
// hold whatever they are (a struct grown by a newer BPF object, a bug):
// never a panic or a read past the record; an event, or an error.
func FuzzDecode(f *testing.F) {
	for kind := byte(0); kind < 20; kind++ {
		for _, n := range []int{int(kindOffset) + 1, 64, 200, 600, 4096} {
			b := make([]byte, n)
			b[kindOffset] = kind
			f.Add(b)
		}
	}
	lying := make([]byte, 600) // lengths inside the record that lie
	lying[kindOffset] = evExec
	for i := int(kindOffset) + 8; i+4 <= len(lying); i += 4 {
		binary.LittleEndian.PutUint32(lying[i:], 0xffffffff)
	}
	f.Add(lying)
	d := newDecoder()
	f.Fuzz(func(t *testing.T, rec []byte) {
		ev, err := d.decode(rec)
		if err == nil && (ev == nil || ev.Hdr() == nil) {
			t.Fatalf("no error and no event from %d bytes", len(rec))
		}
	})
}
