package cli

import (
	"testing"

	"github.com/whyslow/whyslow/internal/event"
)

// TestFiltersMatchNamesAsStored: recordings hold names that are not UTF-8
// as text (event.EncodeText); a --comm or --file typed with the raw bytes
// matches that text (the file glob with its backslashes literal to GLOB),
// and a UTF-8 one is left as typed.
func TestFiltersMatchNamesAsStored(t *testing.T) {
	f := filterFlags{limit: 10, comms: []string{"\xffprog", "nginx"}, file: "*/bad\xffname*"}
	out, err := f.filter(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := event.EncodeText("\xffprog"); len(out.Comms) != 2 || out.Comms[0] != want || out.Comms[1] != "nginx" {
		t.Errorf("comms %q, want [%q nginx]", out.Comms, want)
	}
	if want := `*/bad\\xffname*`; out.FileGlob != want {
		t.Errorf("file glob %q, want %q", out.FileGlob, want)
	}
	f.file = `*\*star*`
	if out, _ := f.filter(nil); out.FileGlob != f.file {
		t.Errorf("a UTF-8 glob became %q", out.FileGlob)
	}
}
