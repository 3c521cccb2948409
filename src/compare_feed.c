/*
 * compare_feed: feeding both sides of a compare on two threads at once
 * (recon_compare_feeder_*, declared in recon_compare.h).
 *
 * A radix-partitioned join. While the sides are read, each feeder stages its
 * rows, compactly, in one stream per partition (by the key's hash): appends
 * only, no table touched. Once both sides are read, both threads build the
 * partitions, taking them one at a time: a partition's upstream rows, then
 * its local rows, each side in read order, into a table and records small
 * enough to stay in the cache (a join table probed at random across the whole
 * window misses the cache on nearly every row; bench/README.md). A staged
 * block, once applied, becomes a record chunk of its builder.
 *
 * Every key's rows of one side reach its partition in that side's read
 * order, and the two sides touch disjoint fields, so the result does not
 * depend on how the threads interleave: it equals adding the upstream rows,
 * then the local ones, with recon_compare_add(). Upstream entry ids are
 * checked (or fingerprinted when speculating) in read order before their
 * rows are staged.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "compare_internal.h"

#define AHEAD 64 /* rows ahead whose id-table slot is prefetched; half that: the id */

#define OP_ADD	  0
#define OP_DUP	  1
#define OP_NOID	  2
#define OP_REJECT 3
#define OP_WIDE	  0x80 /* a struct swide follows the header: the narrow fields are unused */
#define OP_FP	  0x40 /* a speculated entry: 32 bits of its fingerprint follow the header */

/*
 * A staged row: this header's first SROW_HEAD bytes, then (OP_FP) a
 * fingerprint, then (OP_WIDE) a struct swide, then the key bytes; unaligned,
 * read with memcpy. Nearly every row is narrow: an amount in 32 bits, a time
 * within 24 days of the window, a line below 2^32, its side's usual currency
 * (the feeder's cur0: the first row's), a key of at most 255 bytes, and its
 * status, entry type and flags in one byte. 15 bytes a row besides its key
 * and fingerprint, instead of 20: at 10M rows a side, 100 MB less memory
 * written, faulted in and read again.
 */
struct srow {
	int32_t amount;
	int32_t time; /* ms from cmp->tbase */
	uint32_t line;
	uint8_t key_len; /* narrow; a wide row's is in its struct swide */
	uint8_t sef;	 /* narrow: status | entry << SEF_ENTRY | flags << SEF_FLAGS */
	uint8_t op;
};

#define SROW_HEAD (offsetof(struct srow, op) + 1)
#define SEF_ENTRY 2
#define SEF_FLAGS 5
_Static_assert(SROW_HEAD == 15, "a staged row's header is 15 bytes");

struct swide {
	int64_t amount;
	int64_t time;
	uint64_t line;
	char currency[4];
	uint16_t key_len;
	uint8_t status, entry, flags;
};

/* The header of the staged row at p, read field by field (see srow_put()). */
static inline struct srow srow_get(const unsigned char *p)
{
	struct srow r;

	memcpy(&r.amount, p + offsetof(struct srow, amount), 4);
	memcpy(&r.time, p + offsetof(struct srow, time), 4);
	memcpy(&r.line, p + offsetof(struct srow, line), 4);
	r.key_len = p[offsetof(struct srow, key_len)];
	r.sef = p[offsetof(struct srow, sef)];
	r.op = p[offsetof(struct srow, op)];
	return r;
}

/* A narrow staged row's status, entry type and flags, from its sef byte. */
static inline void sef_split(uint8_t sef, uint8_t *status, uint8_t *entry, uint8_t *flags)
{
	*status = sef & ((1u << SEF_ENTRY) - 1);
	*entry = (uint8_t)(sef >> SEF_ENTRY & ((1u << (SEF_FLAGS - SEF_ENTRY)) - 1));
	*flags = (uint8_t)(sef >> SEF_FLAGS);
}

/* Bytes between a staged row's header and its key, by its op. */
static inline size_t srow_middle(uint8_t op)
{
	return (op & OP_FP ? 4 : 0) + (op & OP_WIDE ? sizeof(struct swide) : 0);
}

/* The upstream rows gathered for their id check (exact mode), as wire rows. */
struct batch {
	size_t len;
	unsigned char data[256u << 10];
};

/* One wire row of the id check's batches (upstream, exact mode); key and packed id follow. */
struct wire {
	struct recon_row row; /* key and entry_id unset */
	uint32_t id_len;
	uint8_t op;
};

#define WIRE_SIZE(klen, idlen) (sizeof(struct wire) + (((size_t)(klen) + (idlen) + 7) & ~(size_t)7))

/* A partition's staged rows of one side: a list of blocks. */
struct stream {
	unsigned char *head; /* first block; a block's first word links the next */
	unsigned char *tail;
	size_t pos; /* offset in the tail's data of the buffer's first byte (whole lines) */
	uint64_t rows;
};

/*
 * A block: the link to the next, the length of its rows, then (from
 * BLOCK_HEAD, a cache line in) the rows; a row never spans two blocks.
 */
#define BLOCK_HEAD 64
#define BLOCK_DATA (BLOCK - BLOCK_HEAD)

/*
 * Rows reach their stream through a buffer per partition, all of them side
 * by side (nparts * WC bytes, in the cache): the buffer mirrors the stream
 * from a cache-line boundary, and its whole lines go out with non-temporal
 * stores once it is full. A row written straight to one of a thousand
 * streams would touch a page of its own and read a line from memory before
 * writing it: a TLB miss and a cache miss for nearly every row.
 */
#define WC	256
#define ROW_BIG (WC - 64) /* longer rows go straight to the block */

struct recon_compare_feeder {
	struct recon_compare *cmp;
	int side;
	struct stream *streams; /* one per partition */
	unsigned char *wc;	/* nparts buffers of WC bytes, 64-byte aligned */
	uint16_t *wcn;		/* bytes in each */
	uint16_t cur0;		/* cur_pack() of the side's usual currency: its first row's */
	struct batch *pre; /* upstream rows waiting for their id check (exact mode): pre->len */
	size_t *pre_offs;
	size_t apre_offs;
};

static size_t block_len(const unsigned char *b)
{
	uint64_t n;

	memcpy(&n, b + 8, sizeof(n));
	return (size_t)n;
}

/* Writes n bytes (whole lines) from the buffer src to dst (a line boundary), past the caches. */
static void lines_out(unsigned char *dst, const unsigned char *src, size_t n)
{
#ifdef __SSE2__
	for (size_t i = 0; i < n; i += 16)
		_mm_stream_si128((__m128i *)(void *)(dst + i),
				 _mm_load_si128((const __m128i *)(const void *)(src + i)));
#else
	memcpy(dst, src, n);
#endif
}

/* Writes partition q's buffer to its tail block, whole lines and the last part line. */
static void wc_sync(struct recon_compare_feeder *f, size_t q)
{
	struct stream *s = &f->streams[q];
	const size_t n = f->wcn[q], full = n & ~(size_t)63;
	unsigned char *d = s->tail + BLOCK_HEAD + s->pos, *w = f->wc + q * WC;

	lines_out(d, w, full);
	memcpy(d + full, w + full, n - full);
}

/* Writes the rows of partition q still in its buffer to its tail block, and the block's length. */
static void stream_end(struct recon_compare_feeder *f, size_t q)
{
	struct stream *s = &f->streams[q];
	uint64_t len;

	if (!s->tail)
		return;
	len = s->pos + f->wcn[q];
	wc_sync(f, q);
	memcpy(s->tail + 8, &len, sizeof(len));
	f->wcn[q] = 0;
}

/* Ends partition q's tail block (its buffer written out) and starts a new one. */
static void stream_block(struct recon_compare_feeder *f, size_t q)
{
	struct stream *s = &f->streams[q];
	unsigned char *b;

	stream_end(f, q);
	b = recon_compare_block(f->cmp, (unsigned)f->side);
	memset(b, 0, 16);
	if (s->tail)
		memcpy(s->tail, &b, sizeof(b));
	else
		s->head = b;
	s->tail = b;
	s->pos = 0;
	f->wcn[q] = 0;
}

/* Room for a row of need (<= ROW_BIG) bytes in partition q's buffer. */
static unsigned char *wc_room(struct recon_compare_feeder *f, size_t q, size_t need)
{
	struct stream *s = &f->streams[q];
	unsigned char *w = f->wc + q * WC;
	size_t n = f->wcn[q];

	if (!s->tail || s->pos + n + need > BLOCK_DATA) {
		stream_block(f, q);
		n = 0;
	} else if (n + need > WC) {
		const size_t full = n & ~(size_t)63;
		lines_out(s->tail + BLOCK_HEAD + s->pos, w, full);
		memcpy(w, w + full, n - full);
		s->pos += full;
		n -= full;
	}
	f->wcn[q] = (uint16_t)(n + need);
	return w + n;
}

/* A row of need (> ROW_BIG) bytes, encoded in row, straight to partition q's block. */
static void stream_put_big(struct recon_compare_feeder *f, size_t q, const unsigned char *row,
			   size_t need)
{
	struct stream *s = &f->streams[q];
	size_t at;

	if (need > BLOCK_DATA) {
		fprintf(stderr, "recon: compare: a row of %zu bytes\n", need);
		abort();
	}
	if (!s->tail || s->pos + f->wcn[q] + need > BLOCK_DATA)
		stream_block(f, q);
	wc_sync(f, q);
	at = s->pos + f->wcn[q];
	memcpy(s->tail + BLOCK_HEAD + at, row, need);
	/* the buffer again mirrors the stream from the line the row ends in */
	at += need;
	s->pos = at & ~(size_t)63;
	f->wcn[q] = (uint16_t)(at - s->pos);
	memcpy(f->wc + q * WC, s->tail + BLOCK_HEAD + s->pos, f->wcn[q]);
}

/* stage()'s kp for a row whose key is in its form already */
#define KP_FORM SIZE_MAX

/*
 * Encodes a row (see struct srow) at o, its key's form klen bytes (kp: see
 * stage()); returns its end. The header's fields are stored in place: a
 * struct built on the stack and copied out would be read back across its
 * fields' stores, which the store buffer cannot forward (a stall on every
 * row).
 */
static unsigned char *srow_put(const struct recon_compare *cmp, unsigned char *o,
			       const struct recon_row *row, size_t kp, size_t klen, uint8_t op,
			       uint64_t fp, bool narrow)
{
	if (narrow) {
		const int32_t amount = (int32_t)row->amount,
			      time = (int32_t)(row->time - cmp->tbase);
		const uint32_t line = (uint32_t)row->line;
		memcpy(o + offsetof(struct srow, amount), &amount, 4);
		memcpy(o + offsetof(struct srow, time), &time, 4);
		memcpy(o + offsetof(struct srow, line), &line, 4);
		o[offsetof(struct srow, key_len)] = (uint8_t)klen;
		o[offsetof(struct srow, sef)] =
		    (uint8_t)(row->status | row->entry << SEF_ENTRY | row->flags << SEF_FLAGS);
	} else {
		memset(o, 0, offsetof(struct srow, op));
	}
	o[offsetof(struct srow, op)] = (uint8_t)(op | (narrow ? 0 : OP_WIDE));
	o += SROW_HEAD;
	if (op & OP_FP) {
		const uint32_t fp32 = (uint32_t)(fp ^ fp >> 32);
		memcpy(o, &fp32, 4);
		o += 4;
	}
	if (!narrow) {
		struct swide w;
		memset(&w, 0, sizeof(w));
		w.amount = row->amount;
		w.time = row->time;
		w.line = row->line;
		memcpy(w.currency, row->currency, 4);
		w.key_len = (uint16_t)klen;
		w.status = row->status;
		w.entry = row->entry;
		w.flags = row->flags;
		memcpy(o, &w, sizeof(w));
		o += sizeof(w);
	}
	if (kp == KP_FORM)
		recon_copy_short(o, row->key, klen);
	else
		kform_write(row->key, row->key_len, kp, (char *)o);
	return o + klen;
}

/*
 * Stages a row in its partition's stream: its key shares kp bytes with the
 * compare's reference (struct kref), or is in its form already (KP_FORM); h:
 * key_hash() of the form; fp: the row's fingerprint with OP_FP.
 */
static void stage(struct recon_compare_feeder *f, const struct recon_row *row, size_t kp,
		  uint64_t h, uint8_t op, uint64_t fp)
{
	struct recon_compare *cmp = f->cmp;
	const size_t q = part_of(cmp, h);
	const uint16_t cur = cur_pack(row->currency);
	const size_t klen = kp == KP_FORM ? row->key_len : row->key_len - kp + 1;

	if (!f->cur0)
		f->cur0 = cur;
	const bool narrow = narrow_fits(cmp, row, cur) && cur == f->cur0 && klen <= 255 &&
			    row->status < 1u << SEF_ENTRY &&
			    row->entry < 1u << (SEF_FLAGS - SEF_ENTRY) &&
			    row->flags < 1u << (8 - SEF_FLAGS);
	const size_t need = SROW_HEAD + srow_middle((uint8_t)(op | (narrow ? 0 : OP_WIDE))) + klen;

	f->streams[q].rows++;
	if (need <= ROW_BIG) {
		srow_put(cmp, wc_room(f, q, need), row, kp, klen, op, fp, narrow);
	} else {
		unsigned char *tmp = recon_xmalloc(need);
		srow_put(cmp, tmp, row, kp, klen, op, fp, narrow);
		stream_put_big(f, q, tmp, need);
		free(tmp);
	}
}

/* The key's length of the staged row at p, whose header is r. */
static inline size_t srow_key_len(const unsigned char *p, const struct srow *r)
{
	uint16_t n;

	if (!(r->op & OP_WIDE))
		return r->key_len;
	memcpy(&n, p + SROW_HEAD + (r->op & OP_FP ? 4 : 0) + offsetof(struct swide, key_len),
	       sizeof(n));
	return n;
}

/*
 * Reads the staged row at p into *row (its key points into the block; cur0:
 * its feeder's usual currency); returns its size.
 */
static size_t unstage(const struct recon_compare *cmp, const unsigned char *p, uint16_t cur0,
		      struct recon_row *row, uint8_t *op, uint64_t *fp)
{
	const struct srow r = srow_get(p);
	size_t n = SROW_HEAD;

	if (r.op & OP_FP) {
		uint32_t fp32;
		memcpy(&fp32, p + n, 4);
		*fp = fp32;
		n += 4;
	}
	memset(row, 0, sizeof(*row));
	if (r.op & OP_WIDE) {
		struct swide w;
		memcpy(&w, p + n, sizeof(w));
		n += sizeof(w);
		row->amount = w.amount;
		row->time = w.time;
		row->line = w.line;
		memcpy(row->currency, w.currency, 4);
		row->key_len = w.key_len;
		row->status = w.status;
		row->entry = w.entry;
		row->flags = w.flags;
	} else {
		row->amount = r.amount;
		row->time = cmp->tbase + r.time;
		row->line = r.line;
		cur_unpack(cur0, row->currency);
		row->key_len = r.key_len;
		sef_split(r.sef, &row->status, &row->entry, &row->flags);
	}
	row->key = (const char *)p + n;
	*op = r.op & (uint8_t)~OP_WIDE;
	return n + row->key_len;
}

/*
 * A narrow local row, or a narrow statement entry with an entry id (OP_ADD,
 * speculated or not), through recon_compare_apply_narrow(); false: the row
 * is to be applied in full.
 */
static inline bool narrow_first(struct recon_compare *cmp, struct part *p, int side, uint64_t h,
				const unsigned char *at, const struct srow *sr, uint16_t cur0)
{
	struct recon_narrow n;

	if (side == RECON_SIDE_LOCAL ? sr->op != OP_NOID
				     : sr->op != OP_ADD && sr->op != (OP_ADD | OP_FP))
		return false;
	n.amount = sr->amount;
	n.time = sr->time;
	n.line = sr->line;
	n.cur = cur0;
	sef_split(sr->sef, &n.status, &n.entry, &n.flags);
	n.fp_set = sr->op & OP_FP;
	n.fp32 = 0;
	if (n.fp_set)
		memcpy(&n.fp32, at + SROW_HEAD, 4);
	return recon_compare_apply_narrow(
	    cmp, p, side, h, (const char *)at + SROW_HEAD + srow_middle(sr->op), sr->key_len, &n);
}

/* Rows of a block read ahead: their offsets and hashes, to prefetch their table slots. */
#define BLOCK_ROWS_MAX (BLOCK_DATA / SROW_HEAD + 1) /* a row: its header at least */
#define PF	       8			    /* rows ahead whose slot is prefetched */

/*
 * Applies a stream's rows of `side` to partition p, giving each block read to
 * writer w; speculated entries' fingerprints go to fps. cur0: the feeder's
 * usual currency.
 */
static void apply_stream(struct recon_compare *cmp, struct part *p, int side, unsigned w,
			 struct stream *s, uint16_t cur0, struct recon_fppairs *fps)
{
	unsigned char *b = s->head, *next;
	static _Thread_local uint32_t off[BLOCK_ROWS_MAX];
	static _Thread_local uint64_t hs[BLOCK_ROWS_MAX];

	while (b) {
		const unsigned char *d = b + BLOCK_HEAD;
		const size_t len = block_len(b);
		size_t n = 0;

		memcpy(&next, b, sizeof(next));
		/* the block's rows and their hashes first: the table's slots are prefetched */
		for (size_t o = 0; o < len; n++) {
			const struct srow r = srow_get(d + o);
			const size_t klo = o + SROW_HEAD + srow_middle(r.op);
			const size_t klen = srow_key_len(d + o, &r);
			off[n] = (uint32_t)o;
			hs[n] = key_hash(d + klo, klen);
			o = klo + klen;
		}
		for (size_t i = 0; i < n && i < PF; i++)
			__builtin_prefetch(pt_at(&p->keys, pt_home(&p->keys, (uint32_t)hs[i])));
		for (size_t i = 0; i < n; i++) {
			struct recon_row row;
			uint8_t op;
			uint64_t fp = 0;
			if (i + PF < n)
				__builtin_prefetch(
				    pt_at(&p->keys, pt_home(&p->keys, (uint32_t)hs[i + PF])));
			const struct srow sr = srow_get(d + off[i]);
			if (!(sr.op & OP_WIDE) &&
			    narrow_first(cmp, p, side, hs[i], d + off[i], &sr, cur0))
				continue;
			(void)unstage(cmp, d + off[i], cur0, &row, &op, &fp);
			if (op == OP_REJECT)
				recon_compare_reject_key(cmp, p, side, &row, hs[i]);
			else if (op & OP_FP)
				recon_compare_apply_up_spec(cmp, p, hs[i], &row, 0, fp, fps);
			else if (side == RECON_SIDE_UPSTREAM && cmp->speculate && op == OP_NOID)
				recon_compare_apply_up_spec(cmp, p, hs[i], &row, -1, 0, fps);
			else
				recon_compare_apply_row(cmp, p, side, hs[i], &row,
							op == OP_NOID  ? -1
							: op == OP_DUP ? 1
								       : 0);
		}
		recon_compare_block_put(cmp, w, b);
		b = next;
	}
	s->head = s->tail = NULL;
}

/*
 * Builds partition q on writer w's thread: its upstream rows, then its local
 * ones. false: two speculated entries share a fingerprint.
 */
static bool build_part(struct recon_compare *cmp, size_t q, unsigned w, struct recon_fppairs *fps)
{
	struct part *p = &cmp->part[q];
	struct stream *su = cmp->feeder[0] ? &cmp->feeder[0]->streams[q] : NULL;
	struct stream *sl = cmp->feeder[1] ? &cmp->feeder[1]->streams[q] : NULL;
	const uint64_t nu = su ? su->rows : 0, nl = sl ? sl->rows : 0;
	struct recmark m;
	bool distinct;

	p->w = w;
	recon_compare_rec_mark(cmp, w, &m);
	/* keys: the bigger side's rows and some of the other's (most keys are on both);
	   a partition nothing reached keeps no table */
	if (nu + nl)
		recon_compare_part_reserve(cmp, p, (nu > nl ? nu : nl) + (nu > nl ? nl : nu) / 8);
	if (su)
		apply_stream(cmp, p, RECON_SIDE_UPSTREAM, w, su, cmp->feeder[0]->cur0, fps);
	/* before the local rows: a first entry's fingerprint sits in the local amount */
	distinct = recon_compare_fppairs_distinct(fps);
	if (sl)
		apply_stream(cmp, p, RECON_SIDE_LOCAL, w, sl, cmp->feeder[1]->cur0, fps);
	/* the partition's records are in the cache: evaluated here, most of them */
	recon_compare_prematch(cmp, w, &m);
	return distinct;
}

/* Offsets of the rows of b into *offs; returns their count. */
static size_t batch_index(const struct batch *b, size_t **offs, size_t *aoffs)
{
	size_t n = 0;

	for (size_t o = 0; o < b->len;) {
		struct wire w;
		memcpy(&w, b->data + o, sizeof(w));
		if (n == *aoffs)
			recon_grow((void **)offs, aoffs, n + 1, sizeof(**offs));
		(*offs)[n++] = o;
		o += WIRE_SIZE(w.row.key_len, w.id_len);
	}
	return n;
}

static inline void prefetch_slot(const struct slots *t, uint64_t h)
{
	__builtin_prefetch(&t->v[slot_home(t, (uint32_t)h)]);
}

/* Prefetches the id of the first slot whose tag matches h, if any (a few probes). */
static inline void prefetch_id(const struct slots *t, const struct store *st, uint64_t h)
{
	for (size_t i = slot_home(t, (uint32_t)h), k = 0; k < 8 && t->v[i].ref;
	     i = slot_next(t, i), k++) {
		if (t->v[i].h == (uint32_t)h) {
			__builtin_prefetch(store_at(st, t->v[i].ref));
			return;
		}
	}
}

/* Checks the ids of the upstream rows gathered in f->pre, in order, then stages them. */
static void flush_pre(struct recon_compare_feeder *f)
{
	struct recon_compare *cmp = f->cmp;
	struct batch *b = f->pre;
	size_t n, *off;
	uint64_t *ih;

	if (!b || !b->len)
		return;
	n = batch_index(b, &f->pre_offs, &f->apre_offs);
	off = f->pre_offs;
	ih = recon_xmalloc(recon_st_mult(n ? n : 1, sizeof(*ih)));
	for (size_t i = 0; i < n; i++) {
		struct wire w;
		memcpy(&w, b->data + off[i], sizeof(w));
		ih[i] =
		    w.id_len ? key_hash(b->data + off[i] + sizeof(w) + w.row.key_len, w.id_len) : 0;
	}
	for (size_t i = 0; i < n && i < AHEAD; i++)
		prefetch_slot(&cmp->ids, ih[i]);
	for (size_t i = 0; i < n; i++) {
		struct wire w;
		const unsigned char *key = b->data + off[i] + sizeof(w);

		if (i + AHEAD < n)
			prefetch_slot(&cmp->ids, ih[i + AHEAD]);
		if (i + AHEAD / 2 < n)
			prefetch_id(&cmp->ids, &cmp->idstore, ih[i + AHEAD / 2]);
		memcpy(&w, b->data + off[i], sizeof(w));
		if (w.op != OP_REJECT)
			w.op = !w.id_len ? OP_NOID
			       : recon_compare_id_seen_packed(cmp, key + w.row.key_len, w.id_len,
							      ih[i])
				   ? OP_DUP
				   : OP_ADD;
		w.row.key = (const char *)key;
		stage(f, &w.row, KP_FORM, key_hash(key, w.row.key_len), w.op, 0);
	}
	free(ih);
	b->len = 0;
}

/* Appends an upstream row and its packed id (id_len bytes of id) to the id check's batch. */
static void put_pre(struct recon_compare_feeder *f, const struct recon_row *row, uint8_t op,
		    const unsigned char *id, uint32_t id_len)
{
	size_t need = WIRE_SIZE(row->key_len, id_len);
	struct wire w;

	if (need > sizeof(f->pre->data)) {
		fprintf(stderr, "recon: compare: key of %u bytes\n", row->key_len);
		abort();
	}
	if (!f->pre)
		f->pre = recon_xcalloc(1, sizeof(*f->pre));
	if (f->pre->len + need > sizeof(f->pre->data))
		flush_pre(f);
	memset(&w, 0, sizeof(w));
	w.row = *row;
	w.row.key = NULL;
	w.row.entry_id = NULL;
	w.row.entry_id_len = 0;
	w.id_len = id_len;
	w.op = op;
	memcpy(f->pre->data + f->pre->len, &w, sizeof(w));
	memcpy(f->pre->data + f->pre->len + sizeof(w), row->key, row->key_len);
	if (id_len)
		memcpy(f->pre->data + f->pre->len + sizeof(w) + row->key_len, id, id_len);
	f->pre->len += need;
}

struct recon_compare_feeder *recon_compare_feeder_new(struct recon_compare *cmp, int side)
{
	struct recon_compare_feeder *f = recon_xcalloc(1, sizeof(*f));

	f->cmp = cmp;
	f->side = side == RECON_SIDE_LOCAL;
	f->streams = recon_xcalloc(cmp->nparts, sizeof(*f->streams));
	if (posix_memalign((void **)&f->wc, 64, recon_st_mult(cmp->nparts, WC)))
		f->wc = NULL;
	if (!f->wc) {
		fprintf(stderr, "recon: out of memory\n");
		abort();
	}
	f->wcn = recon_xcalloc(cmp->nparts, sizeof(*f->wcn));
	pthread_mutex_lock(&cmp->mu);
	/* only records the builds made are prematched or listed */
	if (cmp->pre_on || cmp->recs[0].n || cmp->recs[1].n)
		cmp->pre_off = true;
	cmp->pre_on = false;
	cmp->feeder[f->side] = f;
	cmp->nfeeders++;
	pthread_mutex_unlock(&cmp->mu);
	return f;
}

/*
 * A row feed() does not stage at once, its key in its form: a statement entry
 * whose id is checked exactly, or a row after such entries gathered for
 * their check (in read order, so after them).
 */
static void feed_row(struct recon_compare_feeder *f, const struct recon_row *row, bool rejected)
{
	struct recon_compare *cmp = f->cmp;
	const bool id = !rejected && f->side == RECON_SIDE_UPSTREAM && row->entry_id;
	unsigned char small[160];

	if (!id) {
		put_pre(f, row, rejected ? OP_REJECT : OP_NOID, NULL, 0);
	} else if (id_pack_max(row) <= sizeof(small)) {
		/* ids are checked in read order, a batch at a time */
		put_pre(f, row, OP_ADD, small,
			(uint32_t)recon_compare_id_pack(row->entry, row->key, row->key_len,
							row->entry_id, row->entry_id_len, small));
	} else {
		/* a long id: checked now, in order, after the rows gathered */
		flush_pre(f);
		stage(f, row, KP_FORM, key_hash(row->key, row->key_len),
		      recon_compare_id_seen(cmp, row) ? OP_DUP : OP_ADD, 0);
	}
}

/*
 * Feeds a row. The common ones (a local row, a speculated statement entry,
 * with no checked entries waiting before them) go straight to their stream,
 * their key's form hashed from the key and written there; the others go
 * through feed_row() with their key in its form (struct kref).
 */
static void feed(struct recon_compare_feeder *f, const struct recon_row *row, bool rejected)
{
	struct recon_compare *cmp = f->cmp;
	const bool id = !rejected && f->side == RECON_SIDE_UPSTREAM && row->entry_id;
	char buf[KFORM_STACK], *heap;
	struct recon_row er;

	if (id ? cmp->speculate : !(f->pre && f->pre->len)) {
		const size_t p = kform_prefix(cmp, row->key, row->key_len);
		const uint64_t h = kform_hash(row->key, row->key_len, p);
		if (id)
			stage(f, row, p, h, OP_ADD | OP_FP, id_fingerprint(row, h));
		else
			stage(f, row, p, h, rejected ? OP_REJECT : OP_NOID, 0);
		return;
	}
	feed_row(f, kform_row(cmp, row, &er, buf, &heap), rejected);
	free(heap);
}

void recon_compare_feeder_add(struct recon_compare_feeder *f, const struct recon_row *row)
{
	feed(f, row, false);
}

void recon_compare_feeder_add_rejected(struct recon_compare_feeder *f, const struct recon_row *row)
{
	feed(f, row, true);
}

/* Whether a feeder has not ended yet (under mu). */
static bool feeding(struct recon_compare *cmp)
{
	return cmp->fed < cmp->nfeeders;
}

/*
 * Ends a feeder. Once every feeder has ended, the threads that end them build
 * the partitions together; each returns when all are built. The feeders'
 * streams are read by both builders: each is freed only after both are done.
 */
void recon_compare_feeder_free(struct recon_compare_feeder *f)
{
	struct recon_compare *cmp;
	struct recon_fppairs fps = {0};
	bool distinct = true;
	size_t q;

	if (!f)
		return;
	cmp = f->cmp;
	flush_pre(f);
	for (size_t i = 0; i < cmp->nparts; i++)
		stream_end(f, i);
#ifdef __SSE2__
	_mm_sfence(); /* the non-temporal stores are seen by the other builder */
#endif
	pthread_mutex_lock(&cmp->mu);
	cmp->fed++;
	pthread_cond_broadcast(&cmp->cv);
	pthread_mutex_unlock(&cmp->mu);
	/* the other side still reads: its next slabs are faulted in here meanwhile */
	recon_compare_prefault(cmp, f->side, feeding);
	while ((q = atomic_fetch_add(&cmp->next_part, 1)) < cmp->nparts)
		distinct = build_part(cmp, q, (unsigned)f->side, &fps) && distinct;
	free(fps.v);
	pthread_mutex_lock(&cmp->mu);
	cmp->spec_dup = cmp->spec_dup || !distinct;
	cmp->built++;
	pthread_cond_broadcast(&cmp->cv);
	while (cmp->built < cmp->nfeeders)
		recon_compare_wait(cmp, RECON_COMPARE_WAIT_MS);
	/* every record was made by a build: from here on, what changes is listed */
	cmp->pre_on = !cmp->pre_off;
	cmp->npre_total = cmp->npre[0] + cmp->npre[1];
	cmp->feeder[f->side] = NULL;
	pthread_mutex_unlock(&cmp->mu);
	/* what the staged rows left beyond the records, tables and keys' state */
	recon_compare_pool_release(cmp, (unsigned)f->side);
	free(f->streams);
	free(f->wc);
	free(f->wcn);
	free(f->pre);
	free(f->pre_offs);
	free(f);
}
