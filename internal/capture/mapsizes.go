package capture

// sizeMaps sizes the maps for the capture asked. The object's sizes are
// for the largest capture (system-wide, every hook); a hash map allocates
// its buckets at creation, and a preallocated one all its elements, a
// millisecond or more of every start for each large map. A map the capture
// never uses is made one entry; one keyed by process or thread id holds no
// more entries than there are ids (pid_max, 0 if unknown).
func sizeMaps(m *whyslowMapSpecs, opts Options, pidMax uint32) {
	if opts.SystemWide {
		// Every process is a target: the target set is never read.
		m.Targets.MaxEntries = 1
		m.TargetSlots.MaxEntries = 1
	}
	if !opts.Hooks() {
		// Only the syscall hooks use these (1.5 ms of every start).
		m.Agg.MaxEntries = 1
		m.ConnDir.MaxEntries = 1
	}
	if !opts.Requests {
		// Only requests time arrivals (its LRU's 64k entries: 2-4 ms).
		m.SkArrival.MaxEntries = 1
	}
	if pidMax > 0 {
		// The target set is keyed by tgid, the wait slots and the waits
		// begun before capture by tid: sized to pid_max, no key is ever
		// refused for want of room (256k targets took 2 ms to create
		// where pid_max is 32768).
		for _, t := range []*uint32{&m.Targets.MaxEntries, &m.OffcpuStart.MaxEntries, &m.WaitingAtStart.MaxEntries} {
			*t = min(*t, pidMax)
		}
	}
	if !opts.SystemWide {
		// The stacks of one target's waits, not a whole machine's: a stack
		// whose bucket is taken is sent whole instead (own_stack), nothing
		// is lost, and 16k buckets are 1.5 ms and ~9 MB of kernel memory
		// less to create than 64k.
		m.Stacks.MaxEntries = min(m.Stacks.MaxEntries, targetedStackBuckets)
	}
	if opts.DescribedFiles > 0 {
		m.Seen.MaxEntries = uint32(opts.DescribedFiles)
	}
	if opts.stackBuckets > 0 {
		m.Stacks.MaxEntries = opts.stackBuckets
	}
	if opts.EventsRingBytes > 0 {
		m.Events.MaxEntries = uint32(opts.EventsRingBytes)
	}
	if opts.MetaRingBytes > 0 {
		m.Meta.MaxEntries = uint32(opts.MetaRingBytes)
	}
}

// targetedStackBuckets is the stacks map of a capture of targets (run,
// attach), where system-wide captures keep the object's 64k.
const targetedStackBuckets = 1 << 14
