package watch

import "testing"

// An incident's process that left no events in its recording is told by
// the analysis's refusal of its --pid, and only by that: another failure is
// an error of the incident's.
func TestNoSuchProcessIsToldApart(t *testing.T) {
	w := &watcher{o: Options{Exe: "/bin/sh"}}
	_, err := w.run("-c", `echo "whyslow: --pid 5: the recording holds no such process ('whyslow sql REC ...' lists them)" >&2; exit 2`)
	if !noSuchProcess(err) {
		t.Errorf("%v: not told as a process the recording lacks", err)
	}
	_, err = w.run("-c", `echo "whyslow: the recording holds no such process" >&2; exit 1`)
	if noSuchProcess(err) {
		t.Errorf("%v: exit 1 taken for the refusal of --pid", err)
	}
	if _, err = w.run("-c", "exit 0"); noSuchProcess(err) {
		t.Error("a success taken for the refusal of --pid")
	}
}
