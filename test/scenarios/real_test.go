package scenarios

import (
	"sort"
	"testing"
)

// These prove each seed condition is real without whyslow (issue 3).

func TestWordPopPopularityIsSlow(t *testing.T) {
	out, _ := scenario(t, nil, "word-pop")
	times := floats(out)
	if len(times) != 2 {
		t.Fatalf("want two timed requests, got %v from:\n%s", times, out)
	}
	popularity, popular := times[0], times[1]
	if popularity < 5*popular {
		t.Fatalf("/popularity took %.3fs, /popular %.3fs: want at least 5x slower on the slow disk", popularity, popular)
	}
}

func TestSessionStall(t *testing.T) {
	out, _ := scenario(t, nil, "session-stall")
	lat := floats(out)
	if len(lat) < 10 {
		t.Fatalf("want 16 request latencies, got %v", lat)
	}
	sorted := append([]float64(nil), lat...)
	sort.Float64s(sorted)
	median, slowest := sorted[len(sorted)/2], sorted[len(sorted)-1]
	if slowest < 10*median {
		t.Fatalf("slowest request %.1f ms, median %.1f ms: want a stall of at least 10x the median", slowest, median)
	}
}

func TestMysterySecondWriteIsSlower(t *testing.T) {
	_, errs := scenario(t, nil, "mystery", "writes")
	s := seconds(t, errs)
	if len(s) != 2 {
		t.Fatalf("want two timed runs, got %v:\n%s", s, errs)
	}
	if s[1] <= s[0] {
		t.Fatalf("first run %.2fs, second %.2fs: the second should be slower (flushing the first's pages)", s[0], s[1])
	}
}

func TestMysteryNetworkAndCPUTakeTheirTime(t *testing.T) {
	for _, kind := range []string{"network", "cpu"} {
		_, errs := scenario(t, nil, "mystery", kind)
		s := seconds(t, errs)
		if len(s) != 1 || s[0] < 1.8 || s[0] > 10 {
			t.Errorf("%s: measured %v, want about 2 s", kind, s)
		}
	}
}

func TestIozoneWritersSaturateTheDisk(t *testing.T) {
	_, errs := scenario(t, nil, "iozone-writers")
	s := seconds(t, errs)
	// 64 MiB through an 8 MiB/s disk with 16 MiB of dirty room: at least ~5 s.
	if len(s) != 1 || s[0] < 4 {
		t.Fatalf("4 writers x 16 MiB took %v s: the disk throttle did not bite", s)
	}
}
