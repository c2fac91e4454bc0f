package reports

import (
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/whyslow/whyslow/internal/analysis/source"
)

// Stack is the time threads spent with the same kernel stack: off CPU for a
// reason, or on CPU (no stack: whyslow samples no on-CPU stacks).
type Stack struct {
	PID     uint32 `json:"pid"`
	TID     uint32 `json:"tid"`
	Process string `json:"process"`
	Thread  string `json:"thread"`
	// Reason is the off-CPU reason, or "cpu" for on-CPU time.
	Reason string `json:"reason"`
	// Frames are kernel functions, outermost first; none when the kernel
	// gave no stack (a preemption, a wait begun before capture without
	// /proc's stack) and for on-CPU time.
	Frames []string `json:"frames"`
	NS     uint64   `json:"ns"`
}

// StackOptions choose which time to fold.
type StackOptions struct {
	OffCPU, OnCPU bool
	PIDs          []uint32 // only these processes (all when empty)
}

// Stacks folds the recording's off-CPU intervals by thread, reason and
// kernel stack, and its on-CPU time by thread, largest first.
func Stacks(s *source.Source, o StackOptions) ([]Stack, error) {
	s, release, err := s.Hold()
	if err != nil {
		return nil, err
	}
	defer release()
	var pids any // NULL: every process
	if len(o.PIDs) > 0 {
		pids = o.PIDs
	}
	names, err := threadNames(s)
	if err != nil {
		return nil, err
	}
	var out []Stack
	if o.OffCPU {
		frames, err := stackFrames(s)
		if err != nil {
			return nil, err
		}
		rows, err := s.Query(sqlOf("stacks_offcpu"), sql.Named("pids", pids))
		if err != nil {
			return nil, fmt.Errorf("folding off-CPU stacks: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var st Stack
			var id int64
			if err := rows.Scan(&st.PID, &st.TID, &st.Reason, &id, &st.NS); err != nil {
				return nil, err
			}
			st.Frames = frames[id]
			out = append(out, st)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	if o.OnCPU {
		sampled, err := sampledStacks(s, pids)
		if err != nil {
			return nil, err
		}
		out = append(out, sampled...)
		// Threads with no CPU sample: their on-CPU time, with no stack.
		rows, err := s.Query(sqlOf("stacks_unsampled"), sql.Named("pids", pids))
		if err != nil {
			return nil, fmt.Errorf("summing on-CPU time: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			st := Stack{Reason: "cpu"}
			if err := rows.Scan(&st.PID, &st.TID, &st.NS); err != nil {
				return nil, err
			}
			out = append(out, st)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	for i := range out {
		out[i].Process, out[i].Thread = names.process[out[i].PID], names.thread[out[i].TID]
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].NS != out[j].NS {
			return out[i].NS > out[j].NS
		}
		return out[i].TID < out[j].TID || out[i].TID == out[j].TID && slices.Compare(out[i].Frames, out[j].Frames) < 0
	})
	return out, nil
}

// sampledStacks folds the CPU samples (default level): each stands for its
// thread's on-CPU time divided by its samples. A sample in the kernel keeps
// the frames under the timer interrupt; one in user space is "[user]".
func sampledStacks(s *source.Source, pids any) ([]Stack, error) {
	frames, err := stackFrames(s)
	if err != nil {
		return nil, err
	}
	rows, err := s.Query(sqlOf("stacks_sampled"), sql.Named("pids", pids))
	if err != nil {
		return nil, fmt.Errorf("folding CPU samples: %w", err)
	}
	defer rows.Close()
	var out []Stack
	for rows.Next() {
		st := Stack{Reason: "cpu"}
		var user bool
		var id int64
		if err := rows.Scan(&st.PID, &st.TID, &user, &id, &st.NS); err != nil {
			return nil, err
		}
		if user {
			st.Frames = []string{"[user]"}
		} else {
			st.Frames = underInterrupt(frames[id])
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// underInterrupt drops a sample's own frames (the timer interrupt and the
// tracepoint) from a stack given outermost first.
func underInterrupt(frames []string) []string {
	for i, f := range frames {
		if strings.HasPrefix(f, "asm_sysvec_") {
			return frames[:i]
		}
	}
	return frames
}

// stackFrames reads every kernel stack, outermost frame first.
func stackFrames(s *source.Source) (map[int64][]string, error) {
	rows, err := s.Query(sqlOf("stack_frames"))
	if err != nil {
		return nil, fmt.Errorf("reading kernel stacks: %w", err)
	}
	defer rows.Close()
	out := map[int64][]string{}
	for rows.Next() {
		var id int64
		var joined sql.NullString
		if err := rows.Scan(&id, &joined); err != nil {
			return nil, err
		}
		if joined.String != "" {
			out[id] = strings.Split(joined.String, "\x01")
		}
	}
	return out, rows.Err()
}

type names struct{ process, thread map[uint32]string }

// threadNames are the latest names of threads and processes.
func threadNames(s *source.Source) (names, error) {
	n := names{process: map[uint32]string{}, thread: map[uint32]string{}}
	for _, q := range []struct {
		sql string
		to  map[uint32]string
	}{{sqlOf("process_names"), n.process}, {sqlOf("thread_names"), n.thread}} {
		rows, err := s.Query(q.sql)
		if err != nil {
			return n, fmt.Errorf("naming threads: %w", err)
		}
		for rows.Next() {
			var id uint32
			var name string
			if err := rows.Scan(&id, &name); err != nil {
				rows.Close()
				return n, err
			}
			q.to[id] = name
		}
		rows.Close()
	}
	return n, nil
}
