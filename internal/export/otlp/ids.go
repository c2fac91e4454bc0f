package otlp

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// ids derives trace and span ids from what they stand for: the recording (its
// host and clock) and the request or process. Exporting a recording twice
// gives the same ids, so a backend that keeps spans by id keeps them once.
type ids struct{ seed string }

func (s ids) trace(kind string, parts ...uint64) []byte {
	h := sha256.New()
	h.Write([]byte(s.seed))
	h.Write([]byte{0})
	h.Write([]byte(kind))
	for _, p := range parts {
		h.Write(binary.LittleEndian.AppendUint64(nil, p))
	}
	return nonZero(h.Sum(nil)[:16])
}

// span is the n-th span of a trace.
func span(trace []byte, n int) []byte {
	h := sha256.New()
	h.Write(trace)
	h.Write(binary.LittleEndian.AppendUint64(nil, uint64(n)))
	return nonZero(h.Sum(nil)[:8])
}

// nonZero: an all-zero id is invalid in W3C Trace Context and OTLP.
func nonZero(id []byte) []byte {
	for _, b := range id {
		if b != 0 {
			return id
		}
	}
	id[len(id)-1] = 1
	return id
}

// parent is the application's span a request's traceparent names.
type parent struct {
	trace, span []byte
	flags       uint32 // W3C trace flags (sampled)
}

// parseTraceParent reads a traceparent header's value, as
// requests.Entry.TraceParent holds it (already checked there).
func parseTraceParent(v string) (parent, bool) {
	f := strings.Split(v, "-")
	if len(f) < 4 {
		return parent{}, false
	}
	trace, err1 := hex.DecodeString(f[1])
	sp, err2 := hex.DecodeString(f[2])
	flags, err3 := hex.DecodeString(f[3])
	if err1 != nil || err2 != nil || err3 != nil || len(trace) != 16 || len(sp) != 8 || len(flags) != 1 {
		return parent{}, false
	}
	return parent{trace: trace, span: sp, flags: uint32(flags[0])}, true
}
