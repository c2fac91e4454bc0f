package event

// All returns a zero value of every kind of event, one list for what must
// know them all: watch hands an incident's events to its writer as gob,
// which refuses an interface value of a type it was not told of (an
// incident holding a CPU quota's reading could not be written).
func All() []Event {
	return []Event{
		&Syscall{}, &File{}, &OffCPU{}, &Block{}, &Throttle{}, &Writeback{}, &Fork{}, &Exec{},
		&Payload{}, &Sample{}, &Existing{}, &Exit{}, &SockBytes{}, &IOSnapshot{}, &Uring{},
		&SyscallTotals{}, &CPUQuota{}, &MemoryLimit{}, &IOLimit{}, &Dirtied{}, &CPUTime{}, &Unlink{}, &ProcSample{},
	}
}
