// Package protocoltest builds the wire messages of the protocols requests
// are framed by, for tests: a conversation written as the client would send
// it.
package protocoltest

import "encoding/binary"

// Postgres is a typed PostgreSQL message: its type byte, and a length that
// counts itself.
func Postgres(typ byte, body string) string {
	b := []byte{typ, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(4+len(body)))
	return string(b) + body
}

// PostgresStartup is the untyped start-up packet a PostgreSQL connection
// begins with (protocol 3.0).
func PostgresStartup() string {
	body := "user\x00u\x00database\x00d\x00\x00"
	b := make([]byte, 8)
	binary.BigEndian.PutUint32(b, uint32(8+len(body)))
	binary.BigEndian.PutUint32(b[4:], 3<<16)
	return string(b) + body
}

// PostgresExtended is one extended-protocol query, without its Sync: Parse
// (a named statement's, or the unnamed one's), Bind, Describe, Execute.
func PostgresExtended(name, query string) string {
	return Postgres('P', name+"\x00"+query+"\x00\x00\x00") + Postgres('B', "\x00"+name+"\x00\x00\x00\x00\x00\x00\x00") +
		Postgres('D', "P\x00") + Postgres('E', "\x00\x00\x00\x00\x00")
}

// MySQL is a MySQL packet: a 3-byte little-endian length and its sequence
// number.
func MySQL(seq byte, body string) string {
	n := len(body)
	return string([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}) + body
}
