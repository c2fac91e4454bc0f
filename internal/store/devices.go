package store

import "net"

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
