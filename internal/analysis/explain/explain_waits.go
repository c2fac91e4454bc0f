package explain

import (
	"database/sql"
	"fmt"

	"github.com/whyslow/whyslow/internal/analysis/critpath"
	"github.com/whyslow/whyslow/internal/analysis/source"
)

// TargetWaits makes target_pids, target_offcpu and target_threads
// (sql/target.sql): the target's processes, its off-CPU intervals in the
// window, each with what it waited on and whether it waited for work, and
// its threads' names. Every explanation of the target's time reads these,
// so the rules live there once.
func (s *Source) TargetWaits(pids []uint32, win source.Window) error {
	if err := s.useTargets(pids); err != nil {
		return err
	}
	offCPU := s.HasRows("offcpu_raw")
	if !offCPU {
		if err := s.run("target_offcpu_empty"); err != nil {
			return fmt.Errorf("collecting the target's waits: %w", err)
		}
	} else {
		calls, movers, servers := sqlOf("target_offcpu_calls"), sqlOf("target_offcpu_call_movers"), sqlOf("target_offcpu_call_servers")
		if !s.HasRows("syscall_raw") {
			calls = "SELECT NULL::UINTEGER AS tid, NULL::UBIGINT AS ts, NULL::UBIGINT AS end_ts, NULL::VARCHAR AS object WHERE false"
			if !s.HasRows("syscall_totals_raw") {
				movers = "SELECT NULL::UINTEGER AS tid WHERE false"
				servers = "SELECT NULL::UINTEGER AS pid WHERE false"
			}
		}
		if _, err := s.Exec(sqlWhere("target_offcpu", calls, movers, servers), sql.Named("b", win.Begin), sql.Named("e", win.End)); err != nil {
			return fmt.Errorf("collecting the target's waits: %w", err)
		}
		// Only polls join into runs: without one (most short commands'
		// waits are preemptions) the update is 5-8 ms of planning for nothing.
		polls := s.EveryStep
		if err := s.QueryRow("SELECT $1 OR EXISTS (SELECT 1 FROM target_offcpu WHERE is_poll(syscall))", polls).Scan(&polls); err != nil {
			return fmt.Errorf("joining a client's polls: %w", err)
		}
		if polls {
			runs := critpath.PollRuns("SELECT * FROM target_offcpu")
			if _, err := s.Exec(sqlWhere("target_poll_runs", runs)); err != nil {
				return fmt.Errorf("joining a client's polls: %w", err)
			}
		}
	}
	if err := s.run("target_threads"); err != nil {
		return fmt.Errorf("naming the target's threads: %w", err)
	}
	if !offCPU || !s.HasRows("uring_raw") {
		return nil
	}
	if err := s.run("target_uring"); err != nil {
		return fmt.Errorf("resolving io_uring waits: %w", err)
	}
	return nil
}

// targetIO says what target_io holds: the steps that read it are skipped
// when it is empty.
type targetIO struct{ rows bool }

// targetIO makes target_calls, target_dispatched_reads and target_io
// (sql/target.sql), after TargetWaits: the target's I/O, one shape for
// syscalls and io_uring.
// Explain reads them; requests do not.
func (s *Source) targetIO() (targetIO, error) {
	// Each made empty, in its shape, when its input is: 3 and 10-15 ms to
	// plan and run for nothing on a short command.
	calls, dispatched := "target_calls", "target_dispatched_reads"
	if !s.HasRows("syscall_raw") {
		calls = "target_calls_empty"
	}
	if !s.HasRows("block_raw") || !s.HasRows("syscall_raw") { // the kworkers' reads, the target's waits to read
		dispatched = "target_dispatched_reads_empty"
	}
	if err := s.run(calls); err != nil {
		return targetIO{}, fmt.Errorf("summing the target's calls: %w", err)
	}
	if err := s.run(dispatched); err != nil {
		return targetIO{}, fmt.Errorf("finding the reads kernel workers issued for the target: %w", err)
	}
	if inputs, err := s.ioInputs(); err != nil || !inputs {
		return targetIO{}, err
	}
	q := sqlOf("target_io")
	if s.WaitsOnly() {
		q += "\n  UNION ALL FROM target_io_waits()\n  UNION ALL " + sqlOf("target_io_dispatched")
	}
	if _, err := s.Exec(q); err != nil {
		return targetIO{}, fmt.Errorf("collecting the target's I/O: %w", err)
	}
	io := targetIO{rows: s.EveryStep}
	if err := s.QueryRow("SELECT $1 OR EXISTS (SELECT 1 FROM target_io)", io.rows).Scan(&io.rows); err != nil {
		return targetIO{}, fmt.Errorf("collecting the target's I/O: %w", err)
	}
	return io, nil
}

// ioInputs says whether any of target_io's sources holds a row of the
// target: when none does, target_io is not made (its query takes ~20 ms to
// plan) and the steps that read it are skipped.
func (s *Source) ioInputs() (bool, error) {
	for _, t := range []string{"syscall_raw", "syscall_totals_raw", "uring_raw", "unlink_raw"} {
		if s.HasRows(t) {
			return true, nil
		}
	}
	if !s.WaitsOnly() {
		return false, nil
	}
	if s.HasRows("dirtied") {
		return true, nil
	}
	if !s.HasRows("block_raw") && !s.HasRows("samples") {
		return false, nil // target_io_inputs' sources: a disk request, a sample
	}
	var inputs bool
	err := s.QueryRow(sqlOf("target_io_inputs")).Scan(&inputs)
	if err != nil {
		return false, fmt.Errorf("collecting the target's I/O: %w", err)
	}
	return inputs, nil
}
