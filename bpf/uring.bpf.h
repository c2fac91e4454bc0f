/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* io_uring operations with their file. Included by whyslow.bpf.c, after its
 * maps and settings: one object, split along its sections. */
#ifndef WHYSLOW_URING_BPF_H
#define WHYSLOW_URING_BPF_H

/* ---- io_uring ---- */

static __always_inline int on_uring_submit(struct io_kiocb *req)
{
	__u64 id = bpf_get_current_pid_tgid();
	if (!is_target(id >> 32))
		return 0;
	struct uring_pending p = {};
	p.ts = bpf_ktime_get_ns();
	p.pid = id >> 32;
	p.tid = (__u32)id;
	p.opcode = BPF_CORE_READ(req, opcode);
	p.user_data = BPF_CORE_READ(req, cqe.user_data);
	p.fd = BPF_CORE_READ(req, cqe.fd);
	bpf_get_current_comm(p.comm, sizeof(p.comm));
	struct file *f = BPF_CORE_READ(req, file);
	if (f)
		file_ref_of(f, &p.f);
	else
		fd_ref(p.fd, &p.f);
	__u64 key = (__u64)req;
	bpf_map_update_elem(&uring_inflight, &key, &p, BPF_ANY);
	return 0;
}

static __always_inline int on_uring_complete(void *req, struct io_uring_cqe *cqe)
{
	__u64 key = (__u64)req;
	struct uring_pending *p = bpf_map_lookup_elem(&uring_inflight, &key);
	if (!p)
		return 0;
	struct uring_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		count_lost(LOST_URING);
		bpf_map_delete_elem(&uring_inflight, &key);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();
	e->h.ts = p->ts;
	e->h.pid = p->pid;
	e->h.tid = p->tid;
	e->h.kind = EV_URING;
	e->h.cpu = bpf_get_smp_processor_id();
	e->h._pad = 0;
	e->h.cgroup = 0;
	__builtin_memcpy(e->h.comm, p->comm, sizeof(e->h.comm));
	e->dur = now - p->ts;
	e->res = BPF_CORE_READ(cqe, res);
	e->user_data = p->user_data;
	e->opcode = p->opcode;
	e->fd = p->fd;
	e->f = p->f;
	bpf_ringbuf_submit(e, wake_events());
	bpf_map_delete_elem(&uring_inflight, &key);
	return 0;
}

#endif
