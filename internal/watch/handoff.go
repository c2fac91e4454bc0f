package watch

import (
	"bufio"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/whyslow/whyslow/internal/event"
	"github.com/whyslow/whyslow/internal/store"
)

// An incident's recording is written by a whyslow child, handed the window's
// events over a pipe: the watch that runs for weeks never loads DuckDB (its
// code and its allocations were 20 MiB of the watch's memory after the
// first incident), and a failure in writing (a full disk) is the child's.
//
// The hand-off is gob: a header, then the events in batches, as the
// engine's Go values (one schema, the event package's; nothing to keep in
// step by hand).

// handoffHeader opens the stream: where to write, and the recording's
// metadata and lost counts.
type handoffHeader struct {
	Path string
	Meta map[string]string
	Lost map[string]uint64
}

const handoffBatch = 4096

// ExitDiskFull is the writer child's exit code when the disk is full
// (EX_TEMPFAIL): the watch then stops writing incidents until there is room.
const ExitDiskFull = 75

func init() {
	for _, e := range event.All() {
		gob.Register(e)
	}
}

// errDiskFull is the writer child's report of a full disk.
var errDiskFull = errors.New("no space left for the incident")

// handOff writes a recording at path from events, through a child whyslow.
func handOff(own *ownChildren, exe, path string, meta map[string]string, lost map[string]uint64, events []event.Event) error {
	cmd := exec.Command(exe, "watch", "--write-recording")
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the incident's writer: %w", err)
	}
	own.started(cmd)
	err = encodeHandoff(in, handoffHeader{Path: path, Meta: meta, Lost: lost}, events)
	in.Close()
	werr := cmd.Wait()
	own.ended(cmd)
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee) && ee.ExitCode() == ExitDiskFull:
		return fmt.Errorf("%w: %s", errDiskFull, strings.TrimSpace(stderr.String()))
	case werr != nil:
		return fmt.Errorf("writing the incident's recording: %w: %s", werr, strings.TrimSpace(stderr.String()))
	case err != nil:
		return fmt.Errorf("handing the incident to its writer: %w", err)
	}
	return nil
}

// encodeHandoff writes the stream WriteRecording reads.
func encodeHandoff(out io.Writer, h handoffHeader, events []event.Event) error {
	w := bufio.NewWriterSize(out, 1<<20)
	enc := gob.NewEncoder(w)
	err := enc.Encode(h)
	for i := 0; err == nil && i < len(events); i += handoffBatch {
		err = enc.Encode(events[i:min(i+handoffBatch, len(events))])
	}
	if err == nil {
		err = w.Flush()
	}
	return err
}

// WriteRecording is the writer child: it reads an incident from r and
// writes its recording (mode 0600).
func WriteRecording(r io.Reader) error {
	dec := gob.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	var h handoffHeader
	if err := dec.Decode(&h); err != nil {
		return fmt.Errorf("reading the incident: %w", err)
	}
	wr, err := store.Create(h.Path)
	if err != nil {
		return err
	}
	if err := wr.SetMeta(h.Meta); err != nil {
		wr.Close(nil)
		return err
	}
	for {
		var batch []event.Event
		if err := dec.Decode(&batch); err == io.EOF {
			break
		} else if err != nil {
			wr.Close(nil)
			return fmt.Errorf("reading the incident: %w", err)
		}
		wr.Write(batch)
	}
	if err := wr.Err(); err != nil {
		wr.Close(nil)
		return err
	}
	if err := wr.Close(h.Lost); err != nil {
		return err
	}
	return os.Chmod(h.Path, 0o600)
}
