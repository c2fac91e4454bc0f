// Package damage makes damaged copies of recordings, as a hostile or unlucky
// sender would: the corpus behind the tests that every command gives one
// line and exit 3 (or a right answer) on a recording it cannot trust.
//
// Two kinds: Scramble writes random bytes anywhere, which DuckDB's block
// checksums mostly catch; Doctor writes them into data blocks and then
// recomputes the checksums, so the damage passes the storage layer and
// reaches DuckDB's decoders — where it once crashed whyslow (issue 27).
package damage

import (
	"encoding/binary"
	"math/rand/v2"
)

// DuckDB's storage layout (src/storage/storage_info.cpp, single_file_block_manager.cpp):
// a main header and two database headers of headerSize bytes each, then
// blocks of blockSize bytes, every header and block led by the checksum of
// the rest of it.
const (
	headerSize = 4096
	dataStart  = 3 * headerSize
	blockSize  = 262144
	sumSize    = 8
)

// Checksum is DuckDB's block checksum (src/common/checksum.cpp) over a
// buffer whose length is a multiple of 8, as every block's is.
func Checksum(b []byte) uint64 {
	sum := uint64(5381)
	for i := 0; i+8 <= len(b); i += 8 {
		sum ^= binary.LittleEndian.Uint64(b[i:]) * 0xbf58476d1ce4e5b9
	}
	return sum
}

// Blocks is how many data blocks rec holds.
func Blocks(rec []byte) int {
	if len(rec) < dataStart {
		return 0
	}
	return (len(rec) - dataStart) / blockSize
}

// Doctor returns a copy of rec with n random bytes replaced inside its data
// blocks (never a block's own checksum), each changed block's checksum
// recomputed.
func Doctor(rec []byte, rng *rand.Rand, n int) []byte {
	out := append([]byte(nil), rec...)
	blocks := Blocks(out)
	if blocks == 0 {
		return out
	}
	touched := map[int]bool{}
	for range n {
		b := rng.IntN(blocks)
		off := dataStart + b*blockSize + sumSize + rng.IntN(blockSize-sumSize)
		out[off] = byte(rng.Uint32())
		touched[b] = true
	}
	for b := range touched {
		start := dataStart + b*blockSize
		binary.LittleEndian.PutUint64(out[start:], Checksum(out[start+sumSize:start+blockSize]))
	}
	return out
}

// Scramble returns a copy of rec with n random bytes replaced anywhere
// after DuckDB's magic (the file still claims to be a database).
func Scramble(rec []byte, rng *rand.Rand, n int) []byte {
	out := append([]byte(nil), rec...)
	const magicEnd = 12
	if len(out) <= magicEnd {
		return out
	}
	for range n {
		out[magicEnd+rng.IntN(len(out)-magicEnd)] = byte(rng.Uint32())
	}
	return out
}

// Valid reports whether every header's and block's checksum matches: true of
// a recording DuckDB wrote, and of Doctor's copies.
func Valid(rec []byte) bool {
	for h := 0; h+headerSize <= dataStart && h+headerSize <= len(rec); h += headerSize {
		if binary.LittleEndian.Uint64(rec[h:]) != Checksum(rec[h+sumSize:h+headerSize]) {
			return false
		}
	}
	for b := range Blocks(rec) {
		start := dataStart + b*blockSize
		if binary.LittleEndian.Uint64(rec[start:]) != Checksum(rec[start+sumSize:start+blockSize]) {
			return false
		}
	}
	return len(rec) >= dataStart
}
