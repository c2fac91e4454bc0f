package explain

import (
	"strconv"
	"testing"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// whyslow's own disk reads during the target's disk waits (its kallsyms
// cache, its recording) are counted apart, never blamed as a cause.
func TestWhyslowIsNeverBlamed(t *testing.T) {
	r := storetest.New(t, "self", map[string]string{"level": "waits", "scope": "command", "command": "reader",
		"target_pid": "100", "target_start_mono": strconv.FormatUint(storetest.At(0), 10),
		"target_end_mono": strconv.FormatUint(storetest.At(100), 10), "duration_ns": strconv.FormatUint(storetest.MS(100), 10),
		"exit_code": "0", "whyslow_pid": "900"})
	reader := storetest.Thread{PID: 100, TID: 100, Comm: "reader"}
	self := storetest.Thread{PID: 900, TID: 901, Comm: "whyslow"}
	other := storetest.Thread{PID: 500, TID: 500, Comm: "cat"}
	disk := uint32(8 << 20)
	r.Device(storetest.Device{Dev: disk, Name: "sda"})
	kallsyms := event.FileRef{Dev: disk, Ino: 5, Kind: event.KindRegular}
	big := event.FileRef{Dev: disk, Ino: 6, Kind: event.KindRegular}
	r.Add(&event.File{Header: self.At(0), Ref: kallsyms, Path: "/run/whyslow/kallsyms"},
		&event.File{Header: other.At(0), Ref: big, Path: "/data/big"},
		r.Off(reader, 0, 90, event.ReasonDiskRead, "read", storetest.Thread{}, 0),
		storetest.Block(self, 40, 1, 5, disk, event.BlockOp(0), 3<<20, 8, kallsyms),
		storetest.Block(other, 50, 1, 5, disk, event.BlockOp(0), 1<<20, 9000, big))
	x := explainRecorded(t, r.Close(), 100)
	var cat, own bool
	for _, b := range x.Blame {
		if b.PID == 900 && b.Activity != "whyslow" {
			t.Errorf("whyslow blamed as a cause: %+v", b)
		}
		own = own || b.Activity == "whyslow"
		cat = cat || b.PID == 500 && b.Activity == "read"
	}
	if !own || !cat {
		t.Errorf("blame %+v: want cat's read, and whyslow's own counted apart", x.Blame)
	}
}
