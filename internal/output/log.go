package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/whyslow/whyslow/internal/analysis/reports"
	"github.com/whyslow/whyslow/internal/format"
)

// LogFormats are report log's --format values: the table Ops prints, CSV
// with a header row, or one JSON object per line.
var LogFormats = []string{"text", "csv", "json"}

// LogWriter prints operations one at a time as report log reads them, in
// one of LogFormats: a whole recording goes to a pipe at millions of rows a
// second, and `| head` gets its lines at once. Text is Ops's table, made
// with appends and caches (a process's column, a file's line, the clock's
// second) instead of a fmt call per field.
type LogWriter struct {
	w      io.Writer
	format string
	utc    bool
	buf    []byte
	sec    int64  // the wall second prefix was made for
	prefix []byte // "15:04:05." of sec (text), "2006-01-02T15:04:05." (csv)
	zone   []byte // csv: "Z", "+01:00"
	names  map[string]string
	procs  map[procKey]string
	files  map[fileLine]string
}

type procKey struct {
	comm     string
	pid, tid uint32
}

type fileLine struct {
	path string
	fd   int32
}

// NewLogWriter starts the log: the text table's heading and columns, or
// CSV's header row.
func NewLogWriter(w io.Writer, title, logFormat string, utc bool) (*LogWriter, error) {
	l := &LogWriter{w: w, format: logFormat, utc: utc, sec: -1, procs: map[procKey]string{}, files: map[fileLine]string{},
		names: map[string]string{}}
	switch logFormat {
	case "text", "":
		l.format = "text"
		Heading(w, title)
		_, err := fmt.Fprintf(w, "%-16s %9s  %-16s %9s  %s\n", "begin", "duration", "syscall", "size", "process pid/tid")
		return l, err
	case "csv":
		_, err := io.WriteString(w, "begin,begin_ns,duration_ns,class,syscall,size,ret,comm,pid,tid,fd,path\n")
		return l, err
	case "json":
		return l, nil
	}
	return nil, fmt.Errorf("unknown --format %q: text, csv or json", logFormat)
}

// Op writes one operation.
func (l *LogWriter) Op(o *reports.Op) error {
	switch l.format {
	case "json":
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		_, err = l.w.Write(append(escapeInvisible(b), '\n'))
		return err
	case "csv":
		return l.csv(o)
	}
	b := l.buf[:0]
	if o.Outside {
		b = append(b, '*')
	} else {
		b = append(b, ' ')
	}
	b = l.clock(b, o.BeginAt)
	b = append(b, ' ')
	b = padLeft(b, 9, func(b []byte) []byte { return format.AppendDur(b, o.DurNS) })
	b = append(b, "  "...)
	b = padRight(b, 16, o.Syscall)
	b = append(b, ' ')
	b = padLeft(b, 9, func(b []byte) []byte {
		if o.Size != nil {
			return format.AppendBytes(b, uint64(*o.Size))
		}
		return b
	})
	b = append(b, "  "...)
	b = append(b, l.proc(o)...)
	b = append(b, '\n')
	if o.Path != "" {
		b = append(b, "                  "...)
		b = append(b, l.file(o)...)
		b = append(b, '\n')
	}
	l.buf = b
	_, err := l.w.Write(b)
	return err
}

// clock appends "15:04:05.000000": the second's part made once a second.
func (l *LogWriter) clock(b []byte, t time.Time) []byte {
	if l.utc {
		t = t.UTC()
	}
	if sec := t.Unix(); sec != l.sec {
		l.sec = sec
		l.prefix = t.AppendFormat(l.prefix[:0], "15:04:05.")
	}
	b = append(b, l.prefix...)
	us := t.Nanosecond() / 1000
	var d [6]byte
	for i := 5; i >= 0; i-- {
		d[i] = byte('0' + us%10)
		us /= 10
	}
	return append(b, d[:]...)
}

func (l *LogWriter) proc(o *reports.Op) string {
	k := procKey{o.Comm, o.PID, o.TID}
	p, ok := l.procs[k]
	if !ok {
		p = TrimLeft(format.Safe(o.Comm)+" "+strconv.FormatUint(uint64(o.PID), 10)+"/"+strconv.FormatUint(uint64(o.TID), 10), 24)
		l.procs[k] = p
	}
	return p
}

func (l *LogWriter) file(o *reports.Op) string {
	k := fileLine{o.Path, o.FD}
	f, ok := l.files[k]
	if !ok {
		f = format.Safe(o.Path)
		if o.FD >= 0 {
			f = "fd " + strconv.Itoa(int(o.FD)) + "  " + f
		}
		f = TrimLeft(f, 62)
		if len(l.files) > 1<<16 {
			clear(l.files) // a recording of many files: keep the cache small
		}
		l.files[k] = f
	}
	return f
}

// csv writes a row; names are quoted as RFC 4180 says, and made Safe (a
// file name may hold a newline or a terminal's escape).
func (l *LogWriter) csv(o *reports.Op) error {
	b := l.buf[:0]
	b = l.stamp(b, o.BeginAt)
	b = append(b, ',')
	b = strconv.AppendUint(b, o.Begin, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, o.DurNS, 10)
	b = append(b, ',')
	b = csvField(b, o.Class)
	b = append(b, ',')
	b = csvField(b, o.Syscall)
	b = append(b, ',')
	if o.Size != nil {
		b = strconv.AppendInt(b, *o.Size, 10)
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, o.Ret, 10)
	b = append(b, ',')
	b = csvField(b, l.safe(o.Comm))
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(o.PID), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(o.TID), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(o.FD), 10)
	b = append(b, ',')
	b = csvField(b, l.safe(o.Path))
	b = append(b, '\n')
	l.buf = b
	_, err := l.w.Write(b)
	return err
}

// stamp appends RFC 3339 with nanoseconds, all nine digits (the rows sort
// as text): the date and second made once a second.
func (l *LogWriter) stamp(b []byte, t time.Time) []byte {
	if l.utc {
		t = t.UTC()
	}
	if sec := t.Unix(); sec != l.sec {
		l.sec = sec
		l.prefix = t.AppendFormat(l.prefix[:0], "2006-01-02T15:04:05.")
		l.zone = t.AppendFormat(l.zone[:0], "Z07:00")
	}
	b = append(b, l.prefix...)
	ns := t.Nanosecond()
	var d [9]byte
	for i := 8; i >= 0; i-- {
		d[i] = byte('0' + ns%10)
		ns /= 10
	}
	return append(append(b, d[:]...), l.zone...)
}

// safe is format.Safe through a cache: names repeat row after row.
func (l *LogWriter) safe(s string) string {
	v, ok := l.names[s]
	if !ok {
		v = format.Safe(s)
		if len(l.names) > 1<<16 {
			clear(l.names)
		}
		l.names[s] = v
	}
	return v
}

func csvField(b []byte, s string) []byte {
	quote := false
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == ',' || c == '"' || c == '\n' || c == '\r' {
			quote = true
			break
		}
	}
	if !quote {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// padLeft appends what put appends, right-aligned in width runes.
func padLeft(b []byte, width int, put func([]byte) []byte) []byte {
	start := len(b)
	b = put(b)
	n := utf8.RuneCount(b[start:])
	if n >= width {
		return b
	}
	pad := width - n
	b = append(b, make([]byte, pad)...)
	copy(b[start+pad:], b[start:len(b)-pad])
	for i := start; i < start+pad; i++ {
		b[i] = ' '
	}
	return b
}

// padRight appends s left-aligned in width runes.
func padRight(b []byte, width int, s string) []byte {
	b = append(b, s...)
	for n := utf8.RuneCountInString(s); n < width; n++ {
		b = append(b, ' ')
	}
	return b
}
