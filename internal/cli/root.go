package cli

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/whyslow/whyslow/internal/export"
	"github.com/whyslow/whyslow/internal/recorder"
	"github.com/whyslow/whyslow/internal/store"
	"github.com/whyslow/whyslow/internal/target"
	"golang.org/x/sys/unix"
)

const exitCodesHelp = `Exit codes:
  0    success (run, attach: the command's own exit code is passed through)
  1    capture or analysis failed
  2    bad flags or arguments
  3    not a whyslow recording, or unreadable
  4    missing privilege or kernel feature
  126  run: the command cannot be executed
  127  run: command not found`

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "whyslow",
		Short: "Explain why a Linux program is slow, from the kernel's own evidence",
		Long: `whyslow follows a program with eBPF (tracepoints only) and tells where its wall
time went: on CPU, waiting for a CPU, disk reads or writes, dirty-page
throttling, fsync, network, locks; and who and what: the thread, the file,
the device, the peer, and the other processes that caused the wait.

` + exitCodesHelp,
		Example: `  sudo whyslow check
  sudo whyslow run -- make -j4
  sudo whyslow attach -p 4242 -d 10s
  sudo whyslow record -o rec.db -d 30s && whyslow report explain rec.db --pid 4242`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       Version,
	}
	// --version prints what `whyslow version` does, computed only when asked.
	cobra.AddTemplateFunc("versionText", versionText)
	root.SetVersionTemplate(`{{versionText}}`)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(ExitUsage, fmt.Errorf("%s (see '%s --help')", err, c.CommandPath()))
	})
	root.AddCommand(newCheck(), newRun(), newAttach(), newRecord(), newReport(), newSQL(), newTop(), newExporter(), newWatch(), newExport(), newBaseline(), newVersion())
	return root
}

// Main runs whyslow with args and returns the process exit code.
func Main(args []string) int {
	recorder.Version = Version
	// Recordings, their WAL and temporary files, and JSON outputs hold paths,
	// command lines and peers: whyslow creates them private to their owner,
	// like other tools that capture system activity. A command it runs gets
	// the user's own umask back.
	target.CommandUmask = unix.Umask(0o077)
	// WHYSLOW_CPUPROFILE=FILE writes a Go CPU profile, for benchmarks (BENCHMARKS.md).
	if path := os.Getenv("WHYSLOW_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			pprof.StartCPUProfile(f)
			defer func() { pprof.StopCPUProfile(); f.Close() }()
		}
	}
	if readsRecording(args) {
		if os.Getenv(guardEnv) == "" {
			return runGuarded(args)
		}
		store.NoteTemp = leftOnCrash
		export.NoteTemp = leftOnCrash
	}
	// WHYSLOW_MEMPROFILE=FILE writes a Go heap profile at exit, for the
	// long-running modes' memory (BENCHMARKS.md).
	if path := os.Getenv("WHYSLOW_MEMPROFILE"); path != "" {
		go func() {
			for i := 1; ; i++ {
				time.Sleep(time.Minute)
				if f, err := os.Create(fmt.Sprintf("%s.%d.%02d", path, os.Getpid(), i)); err == nil {
					pprof.WriteHeapProfile(f)
					f.Close()
				}
			}
		}()
		defer func() {
			if f, err := os.Create(path); err == nil {
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}()
	}
	root := newRoot()
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	var ce childExit
	if errors.As(err, &ce) {
		return int(ce)
	}
	var said recorder.Reported
	if errors.As(err, &said) {
		return codeOf(err)
	}
	if strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") ||
		strings.Contains(err.Error(), "accepts ") || strings.Contains(err.Error(), "requires at least") {
		report(err)
		return ExitUsage
	}
	report(namingRecording(err, args))
	return codeOf(err)
}

// namingRecording names the recording whose contents failed a reader
// (exit 3): DuckDB's message names a table or a column, not the file.
func namingRecording(err error, args []string) error {
	if codeOf(err) != ExitBadFile || !store.Damaged(err) {
		return err
	}
	if rec := recordingArg(args); rec != "" && !strings.HasPrefix(err.Error(), rec) {
		return fmt.Errorf("%s: damaged: %w", rec, err)
	}
	return err
}

func stderrIsTerminal() bool {
	st, err := os.Stderr.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Command is whyslow's command tree, for what is generated from it: man
// pages and shell completions (packaging/gendocs).
func Command() *cobra.Command {
	root := newRoot()
	root.InitDefaultCompletionCmd()
	root.InitDefaultVersionFlag()
	return root
}

// ExitCodesHelp is the exit-code table `whyslow --help` ends with.
const ExitCodesHelp = exitCodesHelp
