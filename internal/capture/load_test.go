package capture

import "testing"

func TestLoadBothFlavours(t *testing.T) {
	requirePrivileges(t)
	for _, fl := range []string{"tp_btf", "raw_tp"} {
		t.Run(fl, func(t *testing.T) {
			e, err := Open(Options{Flavour: fl})
			if err != nil {
				t.Fatalf("opening engine: %v", err)
			}
			defer e.Close()
			if e.Flavour() != fl {
				t.Fatalf("flavour %s, want %s", e.Flavour(), fl)
			}
			if m := e.Missing(); len(m) > 0 {
				t.Fatalf("tracepoints missing on this kernel: %v", m)
			}
		})
	}
}
