// Package baseline is what a block device can do when nothing else runs
// (`whyslow baseline`): sequential and random read throughput and latency,
// and write throughput where the user named a directory to write in. The
// results are kept per device in a small file under the user's state
// directory; the recorder copies those of the machine's devices into each
// recording's metadata, so an explanation compares a device with its own
// ceiling wherever the recording is read.
package baseline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/whyslow/whyslow/internal/sysinfo"
)

// Result is one device's measurement.
type Result struct {
	Device string `json:"device"` // its name when measured (vda, loop0)
	Model  string `json:"model,omitempty"`
	Serial string `json:"serial,omitempty"`
	// Sequential reads in large requests, one at a time (hdparm -t).
	SeqReadBPS float64 `json:"seq_read_bytes_per_s"`
	// Random 4 KiB reads one at a time: their rate and latency.
	RandReadIOPS   float64 `json:"rand_read_iops"`
	RandReadAvgMS  float64 `json:"rand_read_avg_ms"`
	RandReadP99MS  float64 `json:"rand_read_p99_ms"`
	SeqWriteBPS    float64 `json:"seq_write_bytes_per_s,omitempty"` // measured in a file under a directory
	MeasuredAtUnix int64   `json:"measured_at"`
}

// Key is what a device's baseline is kept under: its model and serial when
// the kernel gives them, so a disk keeps its baseline under another name;
// else its name with what it is over (a loop device's backing file), else
// its name alone.
func Key(d sysinfo.BlockDevice) string {
	switch {
	case d.Serial != "":
		return "serial:" + d.Model + "/" + d.Serial
	case d.Backing != "":
		return "loop:" + d.Name + ":" + d.Backing
	}
	return "name:" + d.Name
}

// metaPrefix starts a recording's metadata key of a device's baseline.
const metaPrefix = "baseline:"

// Meta is the recording metadata of the devices' baselines: "baseline:NAME"
// = "READ_BPS WRITE_BPS" (whole bytes per second, 0: not measured).
func Meta(devs []sysinfo.BlockDevice, kept map[string]Result) map[string]string {
	m := map[string]string{}
	for _, d := range devs {
		if r, ok := kept[Key(d)]; ok && (r.SeqReadBPS > 0 || r.SeqWriteBPS > 0) {
			m[metaPrefix+d.Name] = fmt.Sprintf("%d %d", uint64(r.SeqReadBPS), uint64(r.SeqWriteBPS))
		}
	}
	return m
}

// FromMeta reads the baseline of the device named name from a recording's
// metadata.
func FromMeta(meta map[string]string, name string) (readBPS, writeBPS uint64, ok bool) {
	v, found := meta[metaPrefix+name]
	if !found {
		return 0, 0, false
	}
	r, w, cut := strings.Cut(v, " ")
	rb, err1 := strconv.ParseUint(r, 10, 64)
	wb, err2 := strconv.ParseUint(w, 10, 64)
	if !cut || err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return rb, wb, true
}
