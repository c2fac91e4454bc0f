package capture

// MinKernel is the oldest kernel whose verifier loads the programs: the
// kfuncs bpf_rdonly_cast (plain loads through kernel pointers, every hot
// path), bpf_task_from_pid and bpf_task_release (peers.bpf.h) came in 6.2.
// Everything else they use is older: task storage and
// bpf_get_current_task_btf 5.11, bpf_task_pt_regs 5.15, bpf_loop 5.17,
// ring buffers 5.8, tp_btf 5.5. A tracepoint a kernel lacks (io_uring's,
// writeback_dirty_folio) is left out and said so, not refused (Missing).
const (
	MinKernelMajor = 6
	MinKernelMinor = 2
	MinKernel      = "6.2"
	// MinKernelWhy names what needs it, for `whyslow check`.
	MinKernelWhy = "the kfuncs bpf_rdonly_cast, bpf_task_from_pid and bpf_task_release"
)
