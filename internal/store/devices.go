package store

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// blockDevices maps kernel dev_t (major<<20 | minor) to names such as vda or loop3,
// from /sys/class/block.
func blockDevices() map[uint32]string {
	out := map[uint32]string{}
	entries, err := os.ReadDir("/sys/class/block")
	if err != nil {
		return out
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/sys/class/block", e.Name(), "dev"))
		if err != nil {
			continue
		}
		maj, min, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
		if !ok {
			continue
		}
		ma, err1 := strconv.ParseUint(maj, 10, 32)
		mi, err2 := strconv.ParseUint(min, 10, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out[uint32(ma<<20|mi)] = e.Name()
	}
	return out
}

// interfaceAddrs lists (interface, address) pairs, so network use can be
// shown per interface as LTTng does.
func interfaceAddrs() [][2]string {
	var out [][2]string
	ifaces, err := net.Interfaces()
	if err != nil {
		return out
	}
	for _, i := range ifaces {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				out = append(out, [2]string{i.Name, ipn.IP.String()})
			}
		}
	}
	return out
}
