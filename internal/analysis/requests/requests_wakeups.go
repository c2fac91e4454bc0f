package requests

import "github.com/whyslow/whyslow/internal/event"

// A server may make requests to itself that no client sent. Apache's parent
// retires an idle worker (or restarts) by waking the workers blocked in
// accept(): it connects to its own port, writes "OPTIONS * HTTP/1.0" (its
// "internal dummy connection") and closes without reading. The worker that
// accepts it answers it as a request. Such a request is the server's
// housekeeping: not counted, not in the percentiles.

// silentClients are the connections the target opened and wrote to but
// never read from (no read call at all, not even one that failed): nobody
// waited for an answer on them.
func silentClients(calls []socketCall, clients map[connKey]bool) map[connKey]bool {
	silent, heard := map[connKey]bool{}, map[connKey]bool{}
	for _, c := range calls {
		switch {
		case !clients[c.conn]:
		case event.Reads.Has(c.class, c.name):
			heard[c.conn] = true
		case c.ret > 0 && event.Writes.Has(c.class, c.name):
			silent[c.conn] = true
		}
	}
	for k := range heard {
		delete(silent, k)
	}
	return silent
}

// wakeups are the requests on a connection whose other end is a silent
// client connection of the serving process itself or of one of its
// ancestors (parent maps a process to its parent).
func wakeups(reqs []*request, silent map[connKey]bool, pairs map[connKey][]connKey, parent map[uint32]uint32) map[*request]bool {
	out := map[*request]bool{}
	for _, r := range reqs {
		for _, o := range pairs[r.conn] {
			if silent[o] && ancestorOrSelf(parent, o.pid, r.conn.pid) {
				out[r] = true
			}
		}
	}
	return out
}

// ancestorOrSelf: is a the process p or one of its ancestors?
func ancestorOrSelf(parent map[uint32]uint32, a, p uint32) bool {
	for range 64 { // a pid's ancestry is short; a doctored recording's may loop
		if p == a {
			return true
		}
		next, ok := parent[p]
		if !ok || next == p {
			return false
		}
		p = next
	}
	return false
}

// dropWakeups returns reqs without the server's requests to itself.
func (s recording) dropWakeups(calls []socketCall, clients map[connKey]bool, reqs []*request) ([]*request, error) {
	silent := silentClients(calls, clients)
	if len(silent) == 0 {
		return reqs, nil
	}
	ends, err := s.connEndsOf(calls)
	if err != nil {
		return nil, err
	}
	parent, err := s.Parents()
	if err != nil {
		return nil, err
	}
	drop := wakeups(reqs, silent, otherEnds(ends), parent)
	if len(drop) == 0 {
		return reqs, nil
	}
	kept := reqs[:0]
	for _, r := range reqs {
		if !drop[r] {
			kept = append(kept, r)
		}
	}
	return kept, nil
}
