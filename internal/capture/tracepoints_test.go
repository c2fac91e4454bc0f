package capture

import (
	"strings"
	"testing"

	"github.com/cilium/ebpf"
)

// The tracepoints are named twice: by the TWIN lines of bpf/whyslow.bpf.c
// (each handler's section) and by the engine's list, which attaches them.
// Read from the compiled objects (one a flavour), the two must be the same set, each handler
// with both flavours: a handler added in C and not to the list would never
// be attached, one in the list and not in C fails at every start.
func TestTracepointsMatchObject(t *testing.T) {
	inObject := map[string]string{} // flavour prefix + handler -> tracepoint
	for name, p := range flavourPrograms(t) {
		flavour, tp, ok := strings.Cut(p.SectionName, "/")
		if !ok {
			continue // a global function (describe_file, own_stack): no section of its own
		}
		prefix := map[string]string{"tp_btf": "btf_", "raw_tp": "raw_"}[flavour]
		if prefix == "" || !strings.HasPrefix(name, prefix) {
			t.Errorf("program %s in section %s: not a tp_btf/raw_tp twin", name, p.SectionName)
			continue
		}
		inObject[name] = tp
	}
	listed := map[string]bool{}
	for _, tp := range tracepoints {
		for _, prefix := range []string{"btf_", "raw_"} {
			name := prefix + tp.prog
			listed[name] = true
			if got, ok := inObject[name]; !ok {
				t.Errorf("%s (tracepoint %s) is listed in engine.go but not in the object", name, tp.tp)
			} else if got != tp.tp {
				t.Errorf("%s attaches to %s in C, to %s in engine.go", name, got, tp.tp)
			}
		}
	}
	for name, tp := range inObject {
		if !listed[name] {
			t.Errorf("%s (tracepoint %s) is in the object but not in engine.go's list: never attached", name, tp)
		}
	}
	if len(inObject) < 2*20 {
		t.Errorf("only %d twin programs in the object", len(inObject))
	}
}

// flavourPrograms are the programs of both objects, by name, each in the
// object of its flavour only.
func flavourPrograms(t *testing.T) map[string]*ebpf.ProgramSpec {
	t.Helper()
	out := map[string]*ebpf.ProgramSpec{}
	for flavour, prefix := range map[string]string{"tp_btf": "btf_", "raw_tp": "raw_"} {
		spec, err := loadFlavour(flavour)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range spec.Programs {
			if sec, _, ok := strings.Cut(p.SectionName, "/"); ok && sec != flavour {
				t.Errorf("program %s (%s) in the %s object", name, p.SectionName, flavour)
			}
			if strings.HasPrefix(name, prefix) || !strings.Contains(p.SectionName, "/") {
				out[name] = p
			}
		}
	}
	return out
}
