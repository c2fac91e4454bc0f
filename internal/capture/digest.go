package capture

import (
	"crypto/sha256"
	"encoding/hex"
)

// ObjectDigest is the SHA-256 of the BPF object built into this binary (the
// committed whyslow_x86_bpfel.o): `whyslow version` prints it, so two builds
// can be told to carry the same kernel side.
func ObjectDigest() string {
	sum := sha256.Sum256(_WhyslowBytes)
	return hex.EncodeToString(sum[:])
}
