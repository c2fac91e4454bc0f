package sysinfo

import (
	"maps"
	"slices"
	"testing"
)

func TestListeningTCPPorts(t *testing.T) {
	got := FS{Root: "testdata"}.ListeningTCPPorts()
	// 0x07E8 and 0x223D listen; the connection on 0x223D is no listener of
	// its own, and its remote port 0xB0C4 is no listener; tcp6 is absent.
	if want := []uint16{2024, 8765}; !slices.Equal(slices.Sorted(maps.Keys(got)), want) {
		t.Errorf("listening ports %v, want %v", slices.Sorted(maps.Keys(got)), want)
	}
}

// A process holding a listening socket serves; one holding only a
// connection on the same port does not, nor one /proc does not have.
func TestListeners(t *testing.T) {
	got := FS{Root: "testdata"}.Listeners([]int{500, 501, 999})
	if !slices.Equal(got, []int{500}) {
		t.Errorf("listeners %v, want [500]", got)
	}
}
