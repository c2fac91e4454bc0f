package damage_test

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/whyslow/whyslow/internal/store/damage"
	"github.com/whyslow/whyslow/internal/store/storetest"
)

// The checksum is DuckDB's: every block of a recording DuckDB wrote passes
// it, a changed byte fails it, and Doctor's copies pass it again.
func TestDoctorKeepsChecksums(t *testing.T) {
	path := storetest.Stories[3].Record(t)
	rec, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if damage.Blocks(rec) == 0 || !damage.Valid(rec) {
		t.Fatalf("a recording DuckDB wrote (%d blocks) fails DuckDB's checksum", damage.Blocks(rec))
	}
	if damage.Valid(damage.Scramble(rec, rand.New(rand.NewPCG(1, 2)), 1000)) {
		t.Error("1000 scrambled bytes pass the checksums")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	d := damage.Doctor(rec, rng, 50)
	if bytes.Equal(d, rec) || !damage.Valid(d) {
		t.Errorf("a doctored copy is unchanged (%v) or fails its checksums", bytes.Equal(d, rec))
	}
	if len(d) != len(rec) {
		t.Errorf("a doctored copy is %d bytes, the recording %d", len(d), len(rec))
	}
}
