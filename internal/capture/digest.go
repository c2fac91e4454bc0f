package capture

import (
	"crypto/sha256"
	"encoding/hex"
)

// ObjectDigest is the SHA-256 of the BPF objects built into this binary (the
// committed whyslow_x86_bpfel.o, then whyslowraw_x86_bpfel.o): `whyslow
// version` prints it, so two builds can be told to carry the same kernel side.
func ObjectDigest() string {
	h := sha256.New()
	h.Write(_WhyslowBytes)
	h.Write(_WhyslowRawBytes)
	return hex.EncodeToString(h.Sum(nil))
}
