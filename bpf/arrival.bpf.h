/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* When a request reached the machine (--requests). A server reads a request
 * late when it is busy elsewhere (an event loop in another request's fsync,
 * every worker taken): the client waits from the arrival, so the request's
 * latency runs from there. Per TCP socket, the time the oldest bytes still
 * unread arrived: set by a segment with data that finds the receive queue
 * empty (everything before it read), read by the first read of a request
 * (note_request) and sent with its first bytes. Included by whyslow.bpf.c
 * after syscall.bpf.h. */
#ifndef WHYSLOW_ARRIVAL_BPF_H
#define WHYSLOW_ARRIVAL_BPF_H

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);     /* struct sock * */
	__type(value, __u64);   /* CLOCK_MONOTONIC ns */
} sk_arrival SEC(".maps");

/* tcp_probe fires in tcp_rcv_established, for every segment of an
 * established connection, before the segment is queued: rcv_nxt is still
 * what came before it. Data piggybacked on the handshake's last ACK takes
 * another path: such a request has no arrival and begins at its read. */
static __always_inline int on_tcp_probe(struct sock *sk_p, const struct sk_buff *skb_p)
{
	if (!by_request)
		return 0;
	const struct sk_buff *skb = CAST(struct sk_buff, skb_p);
	/* struct tcp_skb_cb opens skb->cb: seq, then end_seq */
	__u32 seq = *(__u32 *)&skb->cb[0];
	__u32 end_seq = *(__u32 *)&skb->cb[4];
	if (end_seq == seq)
		return 0;   /* a bare ACK */
	struct tcp_sock *tp = CAST(struct tcp_sock, sk_p);
	if (tp->rcv_nxt != tp->copied_seq)
		return 0;   /* unread bytes are there already: the request began with them */
	__u64 key = (__u64)sk_p;
	__u64 now = bpf_ktime_get_ns();
	bpf_map_update_elem(&sk_arrival, &key, &now, BPF_ANY);
	return 0;
}

/* When the bytes a read of fd returned began to arrive; 0 unknown. */
static __always_inline __u64 arrival_of(int fd)
{
	struct file *file = fd_file((void *)bpf_get_current_task(), fd);
	if (!file)
		return 0;
	struct socket *sock = CAST(struct socket, CAST(struct file, file)->private_data);
	__u64 key = (__u64)sock->sk;
	__u64 *ts = bpf_map_lookup_elem(&sk_arrival, &key);
	return ts ? *ts : 0;
}

#endif
