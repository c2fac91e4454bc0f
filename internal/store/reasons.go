package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/whyslow/whyslow/internal/classify"
	"github.com/whyslow/whyslow/internal/event"
)

// A wait's reason is derived, not recorded: offcpu_raw keeps the facts the
// kernel gave (state, stack, syscall, the kinds of its file and of the
// waker's socket, the waker's syscall), and classify.Reason, the one place
// that decides, names the reason of each distinct set of them. The writer
// stores its answer in wait_reasons at the end of a recording (for anyone
// who opens the file with DuckDB alone); every reader derives it again with
// its own rules into a temporary table of the same name, which DuckDB reads
// in its place, in the offcpu view too. A recording made before a rule
// changed is explained by the new rule.

// waitReasonsColumns: the facts, then the reason. sockets is whether the
// process was seen using an internet socket anywhere in the recording
// (socket_users): a poll of such a process waits on the network.
const waitReasonsColumns = "stack_id INTEGER, syscall_nr SMALLINT, state UTINYINT, fkind UTINYINT, waker_fkind UTINYINT, waker_nr SMALLINT, sockets BOOLEAN, quota BOOLEAN, reason VARCHAR"

// derivedTables are written from the others, by the writer and again by
// each reader.
var derivedTables = []string{"wait_reasons", "socket_users"}

// IsDerived says whether a table is a derived one: the loads do not fill it,
// and a reader's temporary copy is made on each of its connections.
func IsDerived(name string) bool { return slices.Contains(derivedTables, name) }

// queryFunc runs a query and returns its rows' values.
type queryFunc func(q string) ([][]any, error)

// derived is a recording's derived tables as SQL VALUES lists ("" for
// none): numbers and our own reason words, never input.
type derived struct{ reasons, sockets string }

// derive reads a recording's wait facts and names their reasons. filled
// is nil for a reader; a writer, deriving its own recording, knows which
// tables it filled (queries over empty ones are not asked: ~1 ms of
// planning each) and that the recording has this version's columns.
func derive(query queryFunc, filled map[string]bool) (derived, error) {
	has := func(table string) bool { return filled == nil || filled[table] }
	inet := uint8(event.KindSocketInet)
	var parts []string
	for _, t := range []string{"syscall_raw", "syscall_totals_raw", "samples", "offcpu_raw"} {
		if has(t) {
			parts = append(parts, fmt.Sprintf("SELECT pid FROM %s WHERE fkind = %d", t, inet))
		}
	}
	var using [][]any
	if len(parts) > 0 {
		var err error
		if using, err = query(strings.Join(parts, "\n	  UNION ") + " ORDER BY pid"); err != nil {
			return derived{}, fmt.Errorf("finding the processes that used sockets: %w", err)
		}
	}
	pids := make([]string, len(using))
	for i, u := range using {
		pids[i] = fmt.Sprint(Int64(u[0]))
	}
	d := derived{}
	if len(pids) > 0 {
		d.sockets = "(" + strings.Join(pids, "), (") + ")"
	}
	if !has("offcpu_raw") {
		return d, nil // no wait, no reason
	}
	frames := map[int64][]string{}
	stacks, err := query(`SELECT stack_id, frames FROM stacks WHERE stack_id IN (SELECT DISTINCT stack_id FROM offcpu_raw)`)
	if err != nil {
		return derived{}, fmt.Errorf("reading the waits' stacks: %w", err)
	}
	for _, s := range stacks {
		list, _ := s[1].([]any)
		f := make([]string, 0, len(list))
		for _, v := range list {
			if name, ok := v.(string); ok {
				f = append(f, name)
			}
		}
		frames[Int64(s[0])] = f
	}
	users := "SELECT NULL::UINTEGER AS pid WHERE false"
	if len(pids) > 0 {
		users = "SELECT * FROM (VALUES (" + strings.Join(pids, "), (") + ")) t(pid)"
	}
	facts, err := query(`SELECT DISTINCT r.stack_id, r.syscall_nr, r.state, r.fkind, r.waker_fkind, r.waker_nr, u.pid IS NOT NULL, coalesce(r.quota, false)
	  FROM offcpu_raw r LEFT JOIN (` + users + `) u USING (pid) ORDER BY ALL`)
	if err != nil {
		return derived{}, fmt.Errorf("reading the waits' facts: %w", err)
	}
	rows := make([]string, len(facts))
	for i, f := range facts {
		stack, nr, state := Int64(f[0]), Int64(f[1]), Int64(f[2])
		fkind, wkind, wnr := Int64(f[3]), Int64(f[4]), Int64(f[5])
		sockets, _ := f[6].(bool)
		quota, _ := f[7].(bool)
		r := classify.Reason(classify.Input{State: byte(state), Syscall: int32(nr), Frames: frames[stack],
			PollOnSockets: sockets, FileKind: event.FileKind(fkind), WakerKind: event.FileKind(wkind), WakerSyscall: int32(wnr),
			Quota: quota})
		rows[i] = fmt.Sprintf("(%d, %d, %d, %d, %d, %d, %t, %t, '%s')", stack, nr, state, fkind, wkind, wnr, sockets, quota, r)
	}
	d.reasons = strings.Join(rows, ", ")
	return d, nil
}

// fill is the SQL that fills the derived tables with d: the recording's
// own (the writer's), or temporary ones of the same name (a reader's).
func (d derived) fill(temporary bool) string {
	var b strings.Builder
	for _, t := range []struct{ name, columns, values string }{
		{"wait_reasons", waitReasonsColumns, d.reasons},
		{"socket_users", "pid UINTEGER", d.sockets},
	} {
		name := t.name
		if temporary {
			fmt.Fprintf(&b, "CREATE OR REPLACE TEMP TABLE %s (%s);\n", t.name, t.columns)
			name = "temp.main." + t.name
		} else {
			fmt.Fprintf(&b, "DELETE FROM %s;\n", name)
		}
		if t.values != "" {
			fmt.Fprintf(&b, "INSERT INTO %s VALUES %s;\n", name, t.values)
		}
	}
	return b.String()
}

// driverQueryAll runs q on a connection of the driver's: one the connector
// is setting up (a reader's), or the writer's, held raw.
func driverQueryAll(ex driver.ExecerContext, q string) ([][]any, error) {
	qc, ok := ex.(driver.QueryerContext)
	if !ok {
		return nil, errors.New("the connection cannot query")
	}
	rows, err := qc.QueryContext(context.Background(), q, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for {
		v := make([]driver.Value, len(rows.Columns()))
		if err := rows.Next(v); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		row := make([]any, len(v))
		for i := range v {
			row[i] = v[i]
		}
		out = append(out, row)
	}
}

// readerDerived derives a recording's tables once, on the first connection
// a reader makes, and fills each connection's temporary copies with them.
// A recording of an earlier version gets the tables and views that make it
// read as one of this version (versions.go) around them: the facts are read
// in this version's shape, and the views read the derived tables.
type readerDerived struct {
	once  sync.Once
	older older
	d     derived
	err   error
}

// onConnect makes a new connection's temporary tables and views. A file
// that is not a recording of a version read fails here first, and Open
// refuses it after for that; a recording whose tables cannot be read fails
// here, and Open refuses it with this error.
func (r *readerDerived) onConnect(ex driver.ExecerContext) {
	exec := func(q string) error {
		if q == "" {
			return nil
		}
		_, err := ex.ExecContext(context.Background(), q, nil)
		return err
	}
	first := false
	r.once.Do(func() {
		first = true
		query := func(q string) ([][]any, error) { return driverQueryAll(ex, q) }
		if r.older, r.err = olderOf(query); r.err != nil {
			return
		}
		if r.err = exec(r.older.before); r.err != nil {
			r.err = r.older.failed(r.err)
			return
		}
		if r.d, r.err = derive(query, nil); r.err != nil {
			return
		}
		exec(r.d.fill(true))
		if r.err = exec(r.older.after); r.err != nil {
			r.err = r.older.failed(r.err)
		}
	})
	if first || r.err != nil {
		return
	}
	exec(r.older.before + r.d.fill(true) + r.older.after)
}
