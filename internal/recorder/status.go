package recorder

import (
	"fmt"
	"os"
	"time"

	"github.com/whyslow/whyslow/internal/capture"
	"github.com/whyslow/whyslow/internal/format"
	"github.com/whyslow/whyslow/internal/store"
	"golang.org/x/sys/unix"
)

// startStatus draws a one-line status on a terminal: elapsed, events, lost,
// size on disk. It is quiet when the writer is not a terminal.
func startStatus(cfg Config, w *store.Writer, eng *capture.Engine, start time.Time) func() {
	f, ok := cfg.Status.(*os.File)
	if !ok || !isTerminal(f) {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(f, "\r\033[K")
				return
			case <-t.C:
				var lost uint64
				if l, err := eng.Lost(); err == nil {
					for _, n := range l {
						lost += n
					}
				}
				var size int64
				if st, err := os.Stat(cfg.Path); err == nil {
					size = st.Size()
				}
				if st, err := os.Stat(cfg.Path + ".wal"); err == nil {
					size += st.Size()
				}
				fmt.Fprintf(f, "\r\033[Krecording %s  events %d  lost %d  %s",
					time.Since(start).Round(100*time.Millisecond), w.Rows(), lost, format.Bytes(uint64(size)))
				if held := eng.Held(); held > 0 {
					// The spool's loader leaves busy CPUs to the target.
					fmt.Fprintf(f, "  (%s held until the CPUs are free)", format.Bytes(uint64(held)))
				}
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
