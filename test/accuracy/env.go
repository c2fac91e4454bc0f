package accuracy

// Env is what of the machine the programs are written against. The tests
// make it (a slow disk, cgroups, servers); the generator only writes its
// paths, ports and sizes into the programs' text, so a program printed in a
// failure says everything it did.
type Env struct {
	// ReadFile is a file on the slow disk whose pages are evicted before
	// each program: every byte a program reads of it comes from the disk.
	ReadFile string
	ReadSize int64
	// Scratch is a directory on the slow disk the program writes in,
	// emptied after it (and its dirty pages written out).
	Scratch string
	// ReadBPS and WriteBPS are the slow disk's blkio throttles, bytes/s:
	// a disk block's size is its seconds times these.
	ReadBPS, WriteBPS int64
	// Freerun is what a buffered writer may dirty before the small dirty
	// limits (set for a program whose dominant block is dirty-throttle)
	// begin to throttle it.
	Freerun int64
	// CPUCgroup is a v1 cpu cgroup with a quota: a thread moves itself in
	// (its tid to tasks) for a cpu-quota block, and to CPUHome, a cgroup
	// beside it without one, after (not to the hierarchy's root: its tasks
	// file is root's alone, and the sampled run is a user's).
	CPUHome, CPUCgroup string
	// MemCgroup is a v1 memory cgroup limited to MemLimit bytes: a memory
	// block's child process moves itself in. The tests let any user write
	// these cgroups' tasks (the sampled run runs the programs as nobody).
	MemCgroup string
	MemLimit  int64
	// The slow servers (testdata/slow_servers.py) on 127.0.0.1 and a Unix
	// socket: each answers a request after the seconds it names.
	TCPPort, UDPPort int
	UnixPath         string
	// Times is a file each block appends its name and seconds to, so that a
	// miss can be told from a program that was not built as intended.
	Times string
}

// MiB is a mebibyte.
const MiB = 1 << 20
