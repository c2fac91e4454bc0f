package baseline

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

const (
	seqBlock  = 1 << 20 // a sequential request, as hdparm -t's and fio's large reads
	randBlock = 4096    // a random request
)

// Options shape a measurement.
type Options struct {
	// Phase is how long each of the sequential and random reads runs (and
	// at most the sequential write).
	Phase time.Duration
	// FileSize is the most a measurement in a directory writes.
	FileSize int64
}

// ReadDevice measures a block device by reading it, never writing: O_DIRECT
// reads past the page cache, one at a time, first in order from its start
// (wrapping at its end), then at random 4 KiB offsets.
func ReadDevice(path string, o Options) (Result, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return Result{}, fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return Result{}, fmt.Errorf("sizing %s: %w", path, err)
	}
	return measureReads(f, size, o)
}

// WriteAndRead measures the device under dir through a file it writes
// there (at most FileSize, for at most a phase, with O_DIRECT, then synced),
// reads back as ReadDevice reads a device, and removes.
func WriteAndRead(dir string, o Options) (Result, error) {
	f, err := os.CreateTemp(dir, ".whyslow-baseline-*")
	if err != nil {
		return Result{}, fmt.Errorf("creating a file under %s: %w", dir, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	// O_DIRECT set after creating: CreateTemp takes no flags.
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFL, unix.O_DIRECT); err != nil {
		return Result{}, fmt.Errorf("asking for direct I/O under %s: %w", dir, err)
	}
	buf, free, err := aligned(seqBlock)
	if err != nil {
		return Result{}, err
	}
	defer free()
	for i := range buf {
		buf[i] = byte(rand.Uint32())
	}
	var written int64
	start := time.Now()
	for written+seqBlock <= o.FileSize && (written == 0 || time.Since(start) < o.Phase) {
		if _, err := f.WriteAt(buf, written); err != nil {
			return Result{}, fmt.Errorf("writing under %s: %w", dir, err)
		}
		written += seqBlock
	}
	if err := f.Sync(); err != nil {
		return Result{}, fmt.Errorf("syncing under %s: %w", dir, err)
	}
	elapsed := time.Since(start)
	r, err := measureReads(f, written, o)
	if err != nil {
		return r, err
	}
	r.SeqWriteBPS = float64(written) / elapsed.Seconds()
	return r, nil
}

// measureReads reads f's first size bytes in order, then at random.
func measureReads(f *os.File, size int64, o Options) (Result, error) {
	if size < seqBlock {
		return Result{}, fmt.Errorf("%s holds %d bytes: too small to measure", f.Name(), size)
	}
	buf, free, err := aligned(seqBlock)
	if err != nil {
		return Result{}, err
	}
	defer free()
	var r Result
	var read, off int64
	start := time.Now()
	for time.Since(start) < o.Phase {
		if off+seqBlock > size {
			off = 0
		}
		n, err := f.ReadAt(buf, off)
		if err != nil && !errors.Is(err, io.EOF) {
			return r, fmt.Errorf("reading %s: %w", f.Name(), err)
		}
		read, off = read+int64(n), off+seqBlock
	}
	r.SeqReadBPS = float64(read) / time.Since(start).Seconds()
	var lat []time.Duration
	blocks := size / randBlock
	start = time.Now()
	for time.Since(start) < o.Phase {
		t := time.Now()
		if _, err := f.ReadAt(buf[:randBlock], rand.Int64N(blocks)*randBlock); err != nil && !errors.Is(err, io.EOF) {
			return r, fmt.Errorf("reading %s: %w", f.Name(), err)
		}
		lat = append(lat, time.Since(t))
	}
	r.RandReadIOPS = float64(len(lat)) / time.Since(start).Seconds()
	r.RandReadAvgMS, r.RandReadP99MS = latencies(lat)
	r.MeasuredAtUnix = time.Now().Unix()
	return r, nil
}

// latencies is the mean and 99th percentile of lat, in ms.
func latencies(lat []time.Duration) (avg, p99 float64) {
	if len(lat) == 0 {
		return 0, 0
	}
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	slices.Sort(lat)
	return float64(sum) / float64(len(lat)) / 1e6, float64(lat[(len(lat)*99)/100]) / 1e6
}

// aligned is a buffer O_DIRECT takes (page aligned), and its release.
func aligned(n int) ([]byte, func(), error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("allocating a buffer: %w", err)
	}
	return b, func() { unix.Munmap(b) }, nil
}
