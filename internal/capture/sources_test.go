package capture

import (
	"os"
	"os/exec"
	"testing"
)

// TestObjectsBuiltFromCommittedSources: the committed bpf2go objects were
// built from the BPF sources as they are now. `make generate` records the
// sources' digest beside the objects; comparing digests needs no clang, so the
// check holds on any machine whatever its compiler or kernel build.
func TestObjectsBuiltFromCommittedSources(t *testing.T) {
	want, err := os.ReadFile("bpf_sources.sha256")
	if err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command("../../scripts/bpf-sources.sh").Output()
	if err != nil {
		t.Fatalf("digesting the BPF sources: %v", err)
	}
	if string(got) != string(want) {
		t.Fatalf("bpf/ changed since the objects were generated: run 'make generate' and commit\nrecorded:\n%s\nnow:\n%s", want, got)
	}
}
