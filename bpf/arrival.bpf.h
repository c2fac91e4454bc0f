/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* When a request reached the machine (--requests). A server reads a request
 * late when it is busy elsewhere (an event loop in another request's fsync,
 * every worker taken): the client waits from the arrival, so the request's
 * latency runs from there. Per TCP socket, the time the oldest bytes still
 * unread arrived, and their sequence number: set by a segment with data that
 * finds the receive queue empty (everything before it read), and by the
 * handshake's end (a connection's first bytes can come no earlier); read by
 * the first read of a turn (note_request) and sent in its record only when
 * that read began at those bytes. Included by whyslow.bpf.c before
 * syscall.bpf.h, which asks it. */
#ifndef WHYSLOW_ARRIVAL_BPF_H
#define WHYSLOW_ARRIVAL_BPF_H

#define TCPHDR_FIN 0x01
#define TCPHDR_SYN 0x02

struct arrival {
	__u64 ts;    /* CLOCK_MONOTONIC ns */
	__u32 seq;   /* the first byte's sequence number: whose bytes these are */
	__u32 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);     /* struct sock * */
	__type(value, struct arrival);
} sk_arrival SEC(".maps");

/* Written in place when the socket has its entry: an LRU update takes a
 * lock and a free element, at every request. A reader on another CPU may
 * see the new time with the old sequence number, or the reverse: the
 * sequence check then refuses it, or dates one request by its successor's
 * arrival, no later than the read that finds it. */
static __always_inline void note_arrival(const struct sock *sk_p, __u32 seq)
{
	__u64 key = (__u64)sk_p;
	struct arrival *old = bpf_map_lookup_elem(&sk_arrival, &key);
	if (old) {
		old->ts = bpf_ktime_get_ns();
		old->seq = seq;
		return;
	}
	struct arrival a = { .ts = bpf_ktime_get_ns(), .seq = seq };
	bpf_map_update_elem(&sk_arrival, &key, &a, BPF_ANY);
}

/* tcp_probe fires in tcp_rcv_established, for every segment of an
 * established connection, before the segment is queued: rcv_nxt is still
 * what came before it. */
static __always_inline int on_tcp_probe(struct sock *sk_p, const struct sk_buff *skb_p)
{
	if (!by_request)
		return 0;
	const struct sk_buff *skb = CAST(struct sk_buff, skb_p);
	const struct tcp_skb_cb *cb = CAST(struct tcp_skb_cb, &skb->cb[0]);
	/* A FIN (and a SYN) takes a sequence number and carries no byte: a
	 * client's close is no request. */
	__u8 flags = cb->tcp_flags;
	__u32 len = cb->end_seq - cb->seq - (flags & TCPHDR_FIN ? 1 : 0) - (flags & TCPHDR_SYN ? 1 : 0);
	if ((__s32)len <= 0)
		return 0;   /* a bare ACK or FIN */
	struct tcp_sock *tp = CAST(struct tcp_sock, sk_p);
	if (tp->rcv_nxt != tp->copied_seq)
		return 0;   /* unread bytes are there already: the request began with them */
	note_arrival(sk_p, tp->rcv_nxt);
	return 0;
}

/* A connection is established (SYN_RECV -> ESTABLISHED): its first bytes
 * come no earlier. With TCP_DEFER_ACCEPT (Apache) the handshake ends with
 * the first data, which tcp_probe does not see: this is their arrival. */
static __always_inline int on_established(const struct sock *sk_p, int oldstate, int newstate)
{
	if (!by_request || oldstate != 3 /* TCP_SYN_RECV */ || newstate != 1 /* TCP_ESTABLISHED */)
		return 0;
	struct tcp_sock *tp = CAST(struct tcp_sock, sk_p);
	note_arrival(sk_p, tp->rcv_nxt);
	return 0;
}

/* When the bytes a read of file (a TCP socket) returned (ret of them, up to
 * its end; none with MSG_PEEK) began to arrive; 0 unknown. The arrival
 * kept for its socket counts only when its sequence number is where the
 * read began: a socket's address is reused by the next connection, whose
 * first bytes may not have stamped it. */
static __always_inline __u64 arrival_of(struct file *file, long ret)
{
	if (!file)
		return 0;
	struct socket *sock = CAST(struct socket, CAST(struct file, file)->private_data);
	struct sock *sk = sock->sk;
	__u64 key = (__u64)sk;
	struct arrival *a = bpf_map_lookup_elem(&sk_arrival, &key);
	if (!a)
		return 0;
	__u32 copied = CAST(struct tcp_sock, sk)->copied_seq;
	if (a->seq != copied - (__u32)ret && a->seq != copied)
		return 0;
	return a->ts;
}

#endif
