package accuracy

// How many bytes a disk block moves to take its seconds, on a disk
// throttled to Env.ReadBPS and Env.WriteBPS.

// readBytes is what a reading block reads: its seconds at the read throttle.
func readBytes(b *Block, env *Env) int64 {
	return roundUp(int64(b.Seconds*float64(env.ReadBPS)), 64<<10)
}

// syncBytes is what an fsync block writes, then syncs: its seconds at the
// write throttle. The writes land in the cache at once (the default dirty
// limits hold them); the sync waits for all of them.
func syncBytes(b *Block, env *Env) int64 {
	return roundUp(int64(b.Seconds*float64(env.WriteBPS)), 64<<10)
}

// dirtyBytes is what a dirty-throttle block writes. Dominant, under the
// small dirty limits: what the writer may dirty before they throttle it,
// then its seconds at the write throttle. A minor writes its seconds'
// worth only: under the default limits they go to the cache at once, and
// were it after the dominant block, the limits would throttle it from its
// first byte.
func dirtyBytes(b *Block, env *Env) int64 {
	n := roundUp(int64(b.Seconds*float64(env.WriteBPS)), 64<<10)
	if b.Dominant {
		n += env.Freerun
	}
	return n
}

// memoryBytes is what a memory block's child writes: the cgroup's limit,
// which fills at once, then its seconds at the write throttle, which
// reclaim waits for.
func memoryBytes(b *Block, env *Env) int64 {
	return env.MemLimit + roundUp(int64(b.Seconds*float64(env.WriteBPS)), 64<<10)
}
