package protocol

import (
	"encoding/binary"
	"fmt"
)

// The MySQL/MariaDB client protocol: packets of a 3-byte little-endian
// length and a sequence number. A command is a packet of sequence 0, its
// first byte the command: COM_QUERY with its SQL, COM_STMT_PREPARE with a
// statement's, COM_STMT_EXECUTE with a prepared statement's id. The server
// speaks first; the client's handshake response and authentication
// (sequence 1 and on) are the connection's, not requests. COM_QUIT,
// COM_STMT_CLOSE and COM_STMT_SEND_LONG_DATA get no answer: no requests.
var mysqlProtocol = &Protocol{
	Name:      "mysql",
	Detect:    mysqlDetect,
	Labeller:  LabelFunc(mysqlLabel),
	NewFramer: func() Framer { return &mysqlFramer{prepared: map[uint32]string{}} },
}

const (
	comQuit          = 0x01
	comQuery         = 0x03
	comStmtPrepare   = 0x16
	comStmtExecute   = 0x17
	comStmtLongData  = 0x18
	comStmtClose     = 0x19
	mysqlMaxPacket   = 1<<24 - 1
	mysqlHandshake41 = 0x200 // CLIENT_PROTOCOL_41, which every handshake response since 4.1 sets
)

// mysqlCommands names the commands a label shows by name.
var mysqlCommands = map[byte]string{0x02: "INIT_DB", 0x04: "FIELD_LIST", 0x09: "STATISTICS", 0x0e: "PING",
	0x11: "CHANGE_USER", 0x1a: "STMT_RESET", 0x1c: "STMT_FETCH", 0x1f: "RESET_CONNECTION", 0x1b: "SET_OPTION"}

// mysqlDetect: a handshake response (a connection's first packet, sequence
// 1) or a command, whole in the bytes or longer than them.
func mysqlDetect(first []byte) bool {
	if len(first) < 5 {
		return false
	}
	size := int(first[0]) | int(first[1])<<8 | int(first[2])<<16
	switch first[3] {
	case 1:
		return size >= 32 && len(first) >= 8 && binary.LittleEndian.Uint32(first[4:])&mysqlHandshake41 != 0
	case 0:
		return mysqlLabel(first, false) != "" && (size+4 <= len(first) || len(first) >= StartBytes)
	}
	return false
}

// mysqlLabel reads a command packet: "mysql UPDATE t", "mysql PREPARE
// SELECT t", "mysql PING".
func mysqlLabel(data []byte, _ bool) string {
	if len(data) < 5 || data[3] != 0 {
		return ""
	}
	size := int(data[0]) | int(data[1])<<8 | int(data[2])<<16
	if size < 1 {
		return ""
	}
	body := data[5:min(len(data), 4+size)]
	switch data[4] {
	case comQuery:
		if l := statementLabel(body); l != "" {
			return "mysql " + l
		}
	case comStmtPrepare:
		if l := statementLabel(body); l != "" {
			return "mysql PREPARE " + l
		}
	case comStmtExecute:
		if size >= 10 {
			return "mysql EXECUTE"
		}
	default:
		if name := mysqlCommands[data[4]]; name != "" && size < 256 {
			return "mysql " + name
		}
	}
	return ""
}

type mysqlFramer struct {
	head     []byte // a packet's head split across reads
	skip     int    // bytes of the current packet still to come
	more     bool   // the current packet is full: the command goes on in the next
	cmdHead  []byte // a command's head, its body not yet read
	began    int    // the read that head came in
	reads    int
	prepares uint32            // COM_STMT_PREPAREs seen: the server numbers statements from 1
	prepared map[uint32]string // their labels, by statement id
}

func (f *mysqlFramer) Feed(data []byte, n int) []Frame {
	f.reads++
	var out []Frame
	pos := 0
	for pos < n {
		if f.cmdHead != nil { // a command whose head came alone (MariaDB reads it first)
			pkt := append(f.cmdHead, data[min(pos, len(data)):min(len(data), pos+f.skip)]...)
			out = f.command(pkt, f.reads-f.began, out)
			f.cmdHead = nil
		}
		if f.skip > 0 {
			adv := min(f.skip, n-pos)
			f.skip -= adv
			pos += adv
			continue
		}
		head := append(f.head, data[min(pos, len(data)):min(len(data), pos+4-len(f.head))]...)
		if len(head) < 4 {
			if pos+4-len(f.head) <= n {
				f.head, f.skip, f.more = nil, 0, false // past what was kept: the next read begins a packet
				return out
			}
			f.head = head
			break
		}
		began := f.reads
		if len(f.head) > 0 {
			began--
		}
		size := int(head[0]) | int(head[1])<<8 | int(head[2])<<16
		pos += 4 - len(f.head)
		f.head = nil
		f.skip = size
		cont := f.more
		f.more = size == mysqlMaxPacket
		switch {
		case cont: // the rest of a long command
		case head[3] != 0:
			out = append(out, Frame{Setup: true})
		case pos == n && size > 0: // its body comes in the next read
			f.cmdHead, f.began = head[:4:4], began
		default:
			// The packet as far as this read has it: its head, then its body.
			pkt := append(head[:4:4], data[min(pos, len(data)):min(len(data), pos+size)]...)
			out = f.command(pkt, f.reads-began, out)
		}
	}
	return out
}

// command adds the request a command packet makes, if it is answered; pkt
// is the packet as far as the recording kept it.
func (f *mysqlFramer) command(pkt []byte, back int, out []Frame) []Frame {
	cmd := byte(0xff) // unknown: not kept
	if len(pkt) > 4 {
		cmd = pkt[4]
	}
	label := mysqlLabel(pkt, false)
	switch cmd {
	case comQuit, comStmtClose, comStmtLongData:
		return out
	case comStmtPrepare:
		// The server numbers a connection's prepared statements 1, 2, ...
		// in its answers (which the recording does not keep).
		f.prepares++
		if len(label) > len("mysql PREPARE ") {
			f.prepared[f.prepares] = "mysql " + label[len("mysql PREPARE "):]
		}
	case comStmtExecute:
		if len(pkt) >= 9 {
			id := binary.LittleEndian.Uint32(pkt[5:])
			if id == ^uint32(0) { // MariaDB: the last one prepared
				id = f.prepares
			}
			if l := f.prepared[id]; l != "" {
				label = l
			}
		}
	}
	if label == "" {
		label = fmt.Sprintf("mysql COMMAND %#02x", cmd)
	}
	return append(out, Frame{Label: label, Back: back})
}
