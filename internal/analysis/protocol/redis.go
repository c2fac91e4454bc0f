package protocol

import (
	"bytes"
	"strconv"
	"strings"
)

// Redis's RESP: a command is an array of bulk strings, "*2\r\n$3\r\nGET\r\n
// $1\r\nk\r\n", or an inline line ("PING\r\n"). Every command is a request,
// pipelined ones too; Redis runs the commands a read brought and writes their
// replies at once, so one write answers them all.
var redisProtocol = &Protocol{
	Name:       "redis",
	Detect:     func(first []byte) bool { return redisLabel(first, false) != "" },
	Labeller:   LabelFunc(redisLabel),
	NewFramer:  func() Framer { return &redisFramer{} },
	AnswersAll: true,
}

// redisLabel reads a Redis command in RESP: "redis GET".
func redisLabel(data []byte, _ bool) string {
	if len(data) < 4 || data[0] != '*' {
		return ""
	}
	_, rest, ok := bytes.Cut(data, []byte("\r\n"))
	if !ok || len(rest) < 2 || rest[0] != '$' {
		return ""
	}
	size, rest, ok := bytes.Cut(rest[1:], []byte("\r\n"))
	n, err := strconv.Atoi(string(size))
	if !ok || err != nil || n <= 0 || n > 32 || len(rest) < n {
		return ""
	}
	cmd := strings.ToUpper(string(rest[:n]))
	if !isWord(cmd) {
		return ""
	}
	return "redis " + cmd
}

type redisFramer struct {
	line   []byte // a line split across reads
	args   int    // bulk strings of the current command still to come
	skip   int    // bytes of the current bulk string (and its CRLF) still to come
	label  string // the current command's
	first  bool   // the next bulk string is the command's name
	began  int
	reads  int
	broken bool // lost in bytes the recording did not keep: wait for a read that begins a command
}

func (f *redisFramer) Feed(data []byte, n int) []Frame {
	f.reads++
	var out []Frame
	if f.broken {
		if len(data) == 0 || data[0] != '*' {
			return nil
		}
		f.broken = false
	}
	pos := 0
	for pos < n {
		if f.skip > 0 {
			adv := min(f.skip, n-pos)
			f.skip -= adv
			pos += adv
			if f.skip == 0 && f.args == 0 {
				out = f.done(out)
			}
			continue
		}
		if pos >= len(data) { // past what was kept
			f.broken, f.line, f.args = true, nil, 0
			return out
		}
		end := bytes.IndexByte(data[pos:], '\n')
		if end < 0 {
			if len(data) < n { // the line goes on past what was kept
				f.broken, f.line, f.args = true, nil, 0
				return out
			}
			f.line = append(f.line, data[pos:]...)
			break
		}
		line := append(f.line, data[pos:pos+end]...)
		f.line = nil
		pos += end + 1
		line = bytes.TrimSuffix(line, []byte("\r"))
		if f.args == 0 && f.label == "" {
			f.began = f.reads
		}
		switch {
		case f.args == 0 && len(line) > 0 && line[0] == '*':
			k, err := strconv.Atoi(string(line[1:]))
			if err != nil || k <= 0 {
				continue // an empty array: nothing to run
			}
			f.args, f.first, f.label = k, true, ""
		case f.args > 0 && len(line) > 0 && line[0] == '$':
			size, err := strconv.Atoi(string(line[1:]))
			if err != nil || size < 0 {
				f.broken, f.args = true, 0
				return out
			}
			f.args--
			if f.first && pos+size <= len(data) {
				if cmd := strings.ToUpper(string(data[pos : pos+size])); isWord(cmd) && size <= 32 {
					f.label = "redis " + cmd
				}
			}
			f.first = false
			f.skip = size + 2
		case f.args == 0: // an inline command
			if w := strings.Fields(string(line)); len(w) > 0 {
				if cmd := strings.ToUpper(w[0]); isWord(cmd) && len(cmd) <= 32 {
					f.label = "redis " + cmd
				}
				out = f.done(out)
			}
		default:
			f.broken, f.args = true, 0
			return out
		}
	}
	return out
}

func (f *redisFramer) done(out []Frame) []Frame {
	label := f.label
	if label == "" {
		label = "redis COMMAND"
	}
	f.label = ""
	return append(out, Frame{Label: label, Back: f.reads - f.began})
}
