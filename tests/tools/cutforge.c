/*
 * cutforge - poses as a cluster member on a daemon's plaintext peer port,
 * for the forged-frame integration test.
 *
 *   cutforge URL CLUSTER FROM TO ROUNDS
 *
 * Each round dials URL afresh (a new connection, as a stranger would)
 * and sends well-formed batches that claim to come from node FROM to node
 * TO of CLUSTER, of every kind that could disturb a link: a hello with a
 * new epoch, a newer, an older and no epoch, data at sequence 1, at the
 * next few numbers and far ahead, an ack and a taken count beyond what was
 * sent, a marker, an abort and a part for a snapshot, and a to_epoch that
 * is not the receiver's.  It prints how many batches it sent.
 */
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <nng/supplemental/util/platform.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cutproto.h"

static int sent;

/* Sends b with items (NULL-terminated) on s. */
static void
send_batch(nng_socket s, Cut__V1__PeerBatch *b, Cut__V1__PeerItem **items)
{
	size_t n = 0, len;
	uint8_t *buf;

	while (items[n] != NULL)
		n++;
	b->items = items;
	b->n_items = n;
	len = protobuf_c_message_get_packed_size(&b->base);
	if ((buf = malloc(len)) == NULL)
		return;
	protobuf_c_message_pack(&b->base, buf);
	if (nng_send(s, buf, len, 0) == 0)
		sent++;
	free(buf);
}

/* One round of forgeries on a new connection to url. */
static int
round_on(const char *url, Cut__V1__PeerBatch *b, uint64_t r)
{
	Cut__V1__PeerItem hello = CUT__V1__PEER_ITEM__INIT,
	                  data = CUT__V1__PEER_ITEM__INIT,
	                  ack = CUT__V1__PEER_ITEM__INIT,
	                  marker = CUT__V1__PEER_ITEM__INIT,
	                  abort_ = CUT__V1__PEER_ITEM__INIT,
	                  part = CUT__V1__PEER_ITEM__INIT;
	Cut__V1__PeerHello h = CUT__V1__PEER_HELLO__INIT;
	Cut__V1__PeerData d = CUT__V1__PEER_DATA__INIT;
	Cut__V1__PeerAck a = CUT__V1__PEER_ACK__INIT;
	Cut__V1__PeerMarker m = CUT__V1__PEER_MARKER__INIT;
	Cut__V1__PeerAbort ab = CUT__V1__PEER_ABORT__INIT;
	Cut__V1__PeerPart p = CUT__V1__PEER_PART__INIT;
	uint64_t epochs[] = {0x5eed0000 + r, UINT64_MAX, 1};
	uint64_t seqs[] = {1, 2, 3, 1000000};
	nng_socket s;
	int rv;

	if ((rv = nng_pair1_open(&s)) != 0 ||
	    (rv = nng_dial(s, url, NULL, 0)) != 0) {
		fprintf(stderr, "cutforge: %s: %s\n", url, nng_strerror(rv));
		return rv;
	}
	nng_socket_set_ms(s, NNG_OPT_SENDTIMEO, 500);
	hello.item_case = CUT__V1__PEER_ITEM__ITEM_HELLO;
	hello.hello = &h;
	data.item_case = CUT__V1__PEER_ITEM__ITEM_DATA;
	data.data = &d;
	ack.item_case = CUT__V1__PEER_ITEM__ITEM_ACK;
	ack.ack = &a;
	marker.item_case = CUT__V1__PEER_ITEM__ITEM_MARKER;
	marker.marker = &m;
	abort_.item_case = CUT__V1__PEER_ITEM__ITEM_ABORT;
	abort_.abort = &ab;
	part.item_case = CUT__V1__PEER_ITEM__ITEM_PART;
	part.part = &p;
	d.payload.data = (uint8_t *)"forged";
	d.payload.len = 6;
	a.upto = 1000000000;
	a.has_taken = 1;
	a.taken = 1000000000;
	m.snapshot_id = "p1:1";
	ab.snapshot_id = "p1:1";
	ab.reason = "forged";
	p.snapshot_id = "p1:1";
	p.node = b->from;
	p.state.data = (uint8_t *)"{}";
	p.state.len = 2;
	for (size_t e = 0; e < sizeof(epochs) / sizeof(epochs[0]); e++) {
		b->has_epoch = 1;
		b->epoch = epochs[e];
		b->has_to_epoch = 1;
		b->to_epoch = 0;
		h.epoch = epochs[e];
		h.next_expected = 1;
		for (size_t k = 0; k < sizeof(seqs) / sizeof(seqs[0]); k++) {
			Cut__V1__PeerItem *items[] = {&hello, &data, &ack, NULL};
			d.seq = seqs[k];
			d.app_seq = seqs[k];
			send_batch(s, b, items);
		}
		{
			Cut__V1__PeerItem *items[] = {&marker, &abort_, &part,
			                              NULL};
			m.seq = ab.seq = p.seq = 1;
			send_batch(s, b, items);
		}
	}
	/* No epoch at all, and one that claims to know another run of
	 * the receiver. */
	{
		Cut__V1__PeerItem *items[] = {&hello, &data, NULL};
		b->has_epoch = 0;
		d.seq = d.app_seq = 1;
		send_batch(s, b, items);
		b->has_epoch = 1;
		b->to_epoch = 0xdeadbeef + r;
		send_batch(s, b, items);
	}
	nng_msleep(50);
	/* No nng_close(): nng 1.5.2 can hang closing a busy socket (nng
	 * issue #1219); the connection is left to the receiver, which
	 * closes it. */
	return 0;
}

int
main(int argc, char **argv)
{
	Cut__V1__PeerBatch b = CUT__V1__PEER_BATCH__INIT;
	long rounds;

	if (argc != 6 || (rounds = strtol(argv[5], NULL, 10)) <= 0) {
		fprintf(stderr,
		        "usage: cutforge URL CLUSTER FROM TO ROUNDS\n");
		return 64;
	}
	b.cluster = argv[2];
	b.from = argv[3];
	b.to = argv[4];
	for (long r = 0; r < rounds; r++)
		if (round_on(argv[1], &b, (uint64_t)r) != 0)
			return 69;
	printf("%d\n", sent);
	fflush(stdout);
	_exit(0);
}
