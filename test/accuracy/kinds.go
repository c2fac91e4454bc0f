// Package accuracy proves whyslow's verdicts on programs no one wrote by
// hand (issue 49): Python programs composed at random, from a seed, of
// blocks whose cause of slowness is known by construction. One block
// dominates the wall time; whyslow's verdict must name its reason.
//
// The generator here is pure (a seed and an Env make the same text each
// time); the tests beside it make the machine the programs run against (a
// slow disk, cgroups, slow servers) and run them under `whyslow run`.
package accuracy

// Kind is a kind of block: a piece of program whose cause of slowness is
// known by construction, and the verdict reason whyslow must give when the
// block dominates the program's wall time.
type Kind struct {
	Name   string
	Reason string
	// Why says how the kernel sees the block, and why that is the reason.
	Why string
	// Variants name the ways the block may be written (select or poll, a
	// fork or an exec...); the seed picks one. The reason is the same.
	Variants []string
	// Fixture is what of the machine the block needs besides a Python: the
	// slow disk, a cgroup, the servers. Only to say so in the report.
	Fixture string
	// body is the block's Python, the lines of a function of no arguments.
	body func(b *Block, env *Env) []string
	// work, for a block whose work a child process does, is that work: the
	// lines of a function of its own (<name>_work), which body forks or
	// execs (an exec'd interpreter runs this same file and calls it).
	work func(b *Block, env *Env) []string
}

// reads says whether the kind's blocks read Env.ReadFile.
func (k *Kind) reads() bool {
	return k == kindDiskRead || k == kindChildRead || k == kindLockRead
}

// writes says whether the kind's blocks write to the slow disk.
func (k *Kind) writes() bool {
	return k == kindFsync || k == kindChildFsync || k == kindDirtyThrottle || k == kindMemory
}

// sharesDisk says whether blocks of kinds a and b would share the slow
// disk's throttle in one direction: run together, each would take longer
// than built (and concurrent fsyncs on one filesystem wait for the same
// journal commit).
func sharesDisk(a, b *Kind) bool {
	return a.reads() && b.reads() || a.writes() && b.writes()
}

// Kinds are every kind of block, in the report's order. A program's seed
// picks its dominant kind from them by index (seed mod len), so the full
// set covers each kind as evenly as its size allows; the sample's seeds are
// chosen on this order (sampleSeeds).
var Kinds = []*Kind{
	kindCPU, kindSleep, kindSelectPipe, kindPollSocket, kindEventWait,
	kindDiskRead, kindFsync, kindDirtyThrottle,
	kindChildCPU, kindChildSleep, kindChildRead, kindChildFsync,
	kindPipeCPU, kindPipeSleep,
	kindTCP, kindUDP, kindUnix,
	kindLockCPU, kindLockSleep, kindLockRead,
	kindCPUQuota, kindMemory,
}

// KindNamed returns the kind of that name, or nil.
func KindNamed(name string) *Kind {
	for _, k := range Kinds {
		if k.Name == name {
			return k
		}
	}
	return nil
}
