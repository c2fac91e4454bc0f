package capture

// The generated loader and object are committed: go build needs no clang.
// bpf/syscalls.h and bpf/conversation.h are generated first, from
// internal/event's syscall table and conversation rule.
//go:generate go run ./gensyscalls ../../bpf/syscalls.h ../../bpf/conversation.h
//go:generate go tool bpf2go -tags linux -target amd64 -type event_kind -type lost_source -type file_kind -type hdr -type file_ref -type syscall_event -type file_event -type offcpu_event -type waker_sock -type block_event -type throttle_event -type writeback_event -type fork_event -type exec_event -type exit_event -type task_io -type sock_bytes_event -type uring_event -type unlink_event -type conn_read_event -type conn_batch_event -type sample_event -type stack_event -type agg_key -type agg_val -type dirty_key -type dirty_val -type cpu_val whyslow ../../bpf/whyslow.bpf.c -- -I../../bpf -D__TARGET_ARCH_x86
// The raw_tp twins are an object of their own: the loader parses only the
// flavour it loads. The types are the first object's.
//go:generate go tool bpf2go -tags linux -target amd64 whyslowRaw ../../bpf/whyslow.bpf.c -- -I../../bpf -D__TARGET_ARCH_x86 -DRAW_TP
