package analysis

import (
	"strconv"

	"github.com/whyslow/whyslow/internal/event"
)

// The kernel's numbers as the analyses' SQL spells them, from their one
// definition in internal/event: fixed words, never input.

// pageBytes is the bytes in a page, for the dirtied and writeback tables'
// page counts.
var pageBytes = strconv.Itoa(event.PageSize)

// opCode is a block operation's number as block_raw stores it.
func opCode(op event.BlockOp) string { return strconv.FormatUint(uint64(op), 10) }
