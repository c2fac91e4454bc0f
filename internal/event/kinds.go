package event

// FileKind mirrors enum file_kind in bpf/whyslow.h.
type FileKind uint32

const (
	KindUnknown FileKind = iota
	KindRegular
	KindDir
	KindChar
	KindBlock
	KindPipe
	KindSocketInet
	KindSocketUnix
	KindSocketOther
	KindSymlink
	KindAnon
)

var kindNames = [...]string{"unknown", "file", "dir", "chardev", "blockdev", "pipe", "socket", "unix", "socket-other", "symlink", "anon"}

func (k FileKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Traffic is how usage splits bytes: file, network, pipe/unix, other (LTTng's columns).
func (k FileKind) Traffic() string {
	switch k {
	case KindRegular, KindBlock:
		return "file"
	case KindSocketInet:
		return "net"
	case KindPipe, KindSocketUnix:
		return "ipc"
	}
	return "other"
}

// Dev splits a kernel dev_t into major and minor.
func Dev(d uint32) (major, minor uint32) { return d >> 20, d & 0xfffff }

// FileKinds lists every kind, for the recording's dimension table.
func FileKinds() []FileKind {
	out := make([]FileKind, len(kindNames))
	for i := range kindNames {
		out[i] = FileKind(i)
	}
	return out
}
