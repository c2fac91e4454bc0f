package requests

import (
	"database/sql"
	"fmt"
	"sort"

	"github.com/whyslow/whyslow/internal/event"
)

// Upstream is the server a request was passed on to while it was served:
// PHP-FPM behind nginx, an application server behind a proxy, a database
// behind an application. Its share of the request is DurationS, from the
// front's first bytes sent to it to the last it read back.
type Upstream struct {
	PID       uint32  `json:"pid"` // 0 when no process of it was seen
	Comm      string  `json:"comm"`
	Peer      string  `json:"peer"` // its address: a unix socket's path, or ip:port
	DurationS float64 `json:"duration_s"`
	// Nested is how many requests cut at the upstream's end belong to this
	// one (a system-wide recording sees both ends): counted here, not again.
	Nested int `json:"nested"`

	first, last uint64 // the hop, in the recording's clock
}

// Mono is the hop into the upstream in the recording's clock
// (CLOCK_MONOTONIC ns): the front's first bytes sent to it to the last read.
func (u *Upstream) Mono() (first, last uint64) { return u.first, u.last }

// hop is a request's conversation on a connection it opened itself while
// it was served: its first write and last read there.
type hop struct {
	conn        connKey
	first, last uint64
}

// connEnds is what pairs the two ends of a connection: a unix socket's peer
// inode, a TCP socket's addresses.
type connEnds struct {
	local, peer string
	peerIno     uint64
}

// hopsOf finds each request's hops: its thread's calls, inside the request,
// on connections it connected.
func hopsOf(calls []socketCall, clients map[connKey]bool, reqs []*request) map[*request][]hop {
	byTID := map[uint32][]socketCall{}
	for _, c := range calls {
		if clients[c.conn] && c.ret > 0 && (event.Reads.Has(c.class, c.name) || event.Writes.Has(c.class, c.name)) {
			byTID[c.tid] = append(byTID[c.tid], c)
		}
	}
	for _, cs := range byTID {
		sort.Slice(cs, func(i, j int) bool { return cs[i].ts < cs[j].ts })
	}
	out := map[*request][]hop{}
	for _, r := range reqs {
		cs := byTID[r.TID]
		i := sort.Search(len(cs), func(i int) bool { return cs[i].ts >= r.firstRead })
		at := map[connKey]int{}
		var hs []hop
		for ; i < len(cs) && cs[i].ts < r.end; i++ {
			c := cs[i]
			j, ok := at[c.conn]
			if !ok {
				j = len(hs)
				at[c.conn] = j
				hs = append(hs, hop{conn: c.conn, first: c.ts})
			}
			hs[j].last = c.ts + c.dur
		}
		if len(hs) > 0 {
			out[r] = hs
		}
	}
	return out
}

// connEndsOf reads how each connection of calls is addressed.
func (s recording) connEndsOf(calls []socketCall) (map[connKey]connEnds, error) {
	rows, err := s.Query(sqlOf("requests_connection_ends"))
	if err != nil {
		return nil, fmt.Errorf("reading connections' addresses: %w", err)
	}
	defer rows.Close()
	out := map[connKey]connEnds{}
	for rows.Next() {
		var k connKey
		var e connEnds
		if err := rows.Scan(&k.pid, &k.dev, &k.ino, &k.gen, &e.local, &e.peer, &e.peerIno); err != nil {
			return nil, err
		}
		out[k] = e
	}
	return out, rows.Err()
}

// otherEnds pairs connections with the connections at their other end: a
// unix socket's peer inode names it (one end may have been described before
// the other had an inode: a connection not yet accepted), TCP's addresses,
// swapped.
func otherEnds(ends map[connKey]connEnds) map[connKey][]connKey {
	byIno := map[uint64][]connKey{}
	byAddr := map[[2]string][]connKey{}
	for k, e := range ends {
		byIno[k.ino] = append(byIno[k.ino], k)
		if e.local != "" && e.peer != "" {
			byAddr[[2]string{e.local, e.peer}] = append(byAddr[[2]string{e.local, e.peer}], k)
		}
	}
	out := map[connKey][]connKey{}
	for k, e := range ends {
		if e.peerIno != 0 {
			for _, o := range byIno[e.peerIno] {
				if o.dev == k.dev && ends[o].peerIno != k.ino {
					out[k] = append(out[k], o)
					out[o] = append(out[o], k) // the other end did not name this one
				} else if o.dev == k.dev {
					out[k] = append(out[k], o) // both ends named each other: each adds its own
				}
			}
		}
		if e.local != "" && e.peer != "" {
			out[k] = append(out[k], byAddr[[2]string{e.peer, e.local}]...)
		}
	}
	return out
}

// nestUpstreams counts each request once, at the front: a request cut at the
// other end of one of its hops, inside its time, is the upstream's part of
// it. It names each request's upstream and returns the requests that are no
// other's part.
func (s recording) nestUpstreams(calls []socketCall, clients map[connKey]bool, reqs []*request) ([]*request, error) {
	hops := hopsOf(calls, clients, reqs)
	if len(hops) == 0 {
		return reqs, nil
	}
	ends, err := s.connEndsOf(calls)
	if err != nil {
		return nil, err
	}
	pairs := otherEnds(ends)
	byConn := map[connKey][]*request{}
	for _, r := range reqs {
		byConn[r.conn] = append(byConn[r.conn], r)
	}
	nested := map[*request]bool{}
	for _, r := range reqs {
		var best *Upstream
		for _, h := range hops[r] {
			u := &Upstream{Peer: ends[h.conn].peer, DurationS: float64(h.last-h.first) / 1e9, first: h.first, last: h.last}
			for _, o := range pairs[h.conn] {
				for _, q := range byConn[o] {
					// Its time inside the hop's, a millisecond either side.
					if q.read+1e6 >= h.first && q.end <= h.last+1e6 {
						nested[q] = true
						u.PID, u.Comm = q.PID, q.Comm
						u.Nested++
					}
				}
			}
			if best == nil || u.DurationS > best.DurationS {
				best = u
			}
		}
		r.Upstream = best
		r.hops = hops[r]
	}
	kept := reqs[:0]
	for _, r := range reqs {
		if !nested[r] {
			kept = append(kept, r)
		}
	}
	return kept, s.upstreamWakers(kept, ends)
}

// upstreamWakers names the upstream process where its own calls were not
// recorded (a -p recording of the front alone): the process that woke the
// request's thread from its socket on the hop, as the kernel saw it.
func (s recording) upstreamWakers(reqs []*request, ends map[connKey]connEnds) error {
	var tids []uint32
	seen := map[uint32]bool{}
	for _, r := range reqs {
		if r.Upstream != nil && r.Upstream.PID == 0 && !seen[r.TID] {
			seen[r.TID] = true
			tids = append(tids, r.TID)
		}
	}
	if len(tids) == 0 {
		return nil
	}
	sort.Slice(tids, func(i, j int) bool { return tids[i] < tids[j] })
	rows, err := s.Query(sqlOf("requests_upstream_wakers"), sql.Named("tids", tids))
	if err != nil {
		return fmt.Errorf("finding the upstreams' processes: %w", err)
	}
	defer rows.Close()
	type wake struct {
		start, end, peerIno uint64
		pid                 uint32
		comm, local         string
	}
	byTID := map[uint32][]wake{}
	for rows.Next() {
		var tid uint32
		var w wake
		if err := rows.Scan(&tid, &w.start, &w.end, &w.pid, &w.comm, &w.peerIno, &w.local); err != nil {
			return err
		}
		byTID[tid] = append(byTID[tid], w)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, r := range reqs {
		u := r.Upstream
		if u == nil || u.PID != 0 {
			continue
		}
		var h *hop
		for i := range r.hops {
			if h == nil || r.hops[i].last-r.hops[i].first > h.last-h.first {
				h = &r.hops[i]
			}
		}
		// Its socket is the other end of the hop's: the unix peer, or the
		// TCP address the hop connected to.
		mine := ends[h.conn]
		waits := map[uint32]uint64{}
		comms := map[uint32]string{}
		for _, w := range byTID[r.TID] {
			if w.end < h.first || w.end > h.last+1e6 {
				continue
			}
			if w.peerIno == h.conn.ino || mine.peer != "" && w.local == mine.peer {
				waits[w.pid] += w.end - max(w.start, h.first)
				comms[w.pid] = w.comm
			}
		}
		for pid, ns := range waits {
			if u.PID == 0 || ns > waits[u.PID] {
				u.PID, u.Comm = pid, comms[pid]
			}
		}
	}
	return nil
}
