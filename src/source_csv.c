/*
 * source_csv: the CSV statement reader (kind "csv").
 *
 * The file is read with read(2) in 1 MiB blocks and cut into physical lines
 * with memchr(), so memory grows with the longest record, never with the
 * file. Each physical line is, in order: dropped (skip_lines), transcoded to
 * UTF-8 (encoding other than UTF-8), stripped of a UTF-8 BOM (line 1) and of
 * the '\r' of a CRLF, then classified outside a record: blank (skipped), stop
 * line (it and the rest of the file become the trailer), comment line
 * (skipped; kept as footer once the header or data was seen), or the start
 * of a record.
 *
 * Records: a line without the quote character (or any line when quoting is
 * off) is split on the delimiter in place, without copying. A line holding
 * the quote character goes through libcsv in strict mode, fed one physical
 * line at a time, so a quoted field may span lines and the record keeps the
 * number of the line it started on. Both paths give the same cells for the
 * same text: libcsv is configured to trim nothing and to end records at '\n'
 * only.
 *
 * Malformed records are not errors: they come back as rows with `reject`
 * set (wrong field count, unterminated or misplaced quote, record over
 * 16 MiB, invalid UTF-8 or NUL, invalid bytes in the source encoding), so
 * every record read is either compared or kept as a reject.
 *
 * Provider layouts: a role may name alternative header columns (older
 * layouts); `delim_guard` splits data cells only on the delimiter followed by
 * the guard (WeChat ",`", where product names may hold raw commas); a .zip
 * input (Alipay) is inflated from the member the side names. Every byte read
 * from the file feeds a SHA-256 (the run records it); when the records end,
 * the rest of the file is read into the hash and the statement's control
 * totals (recon_totals) are checked: a mismatch, or required totals missing,
 * ends the read with RECON_EINPUT before anything is compared.
 */
#include "recon_source.h"

#include <errno.h>
#include <fcntl.h>
#include <iconv.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_SPLIT512 1
#endif
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include <csv.h>
#include <jansson.h>

#include "recon_buf.h"
#include "recon_dbcs.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_pump.h"
#include "recon_sha256.h"
#include "recon_time.h"
#include "recon_totals.h"
#include "recon_zip.h"

#define CSV_BLOCK      ((size_t)512 << 10) /* read(2) size: a lane's ring holds 4 MiB */
#define CSV_RING       8		   /* a lane's read buffers (struct csv_source) */
#define CSV_IDLE_MS    ((int64_t)300000)   /* a pipe's default idle_timeout: 5 minutes */
#define CSV_MAX_RECORD ((size_t)16 << 20)  /* longer records are rejects */
#define CSV_RAW_MAX    1024		   /* row->raw cap */
#define CSV_KEEP_MAX   ((size_t)1 << 20)   /* trailer / footer text cap */
#define CSV_POS_MAX    100000		   /* header=false: largest column position */
#define CSV_LIBCSV_BLK ((size_t)64 << 10)  /* libcsv field buffer growth step */
#define CSV_NO_COL     SIZE_MAX

struct csv_field {
	size_t off; /* from fbase */
	size_t len;
};

struct csv_prefix {
	const char *s; /* borrowed from the side */
	size_t len;
};

struct csv_prefixes {
	struct csv_prefix *v;
	size_t n;
};

struct csv_source {
	struct recon_source base;      /* must be first */
	const struct recon_side *side; /* borrowed: the job outlives the source */
	char *path;
	int fd;

	/* Line reader: buf[pos, end) is unread input; scan bytes of it hold no '\n'. */
	char *buf;
	size_t cap, pos, end, scan;
	/*
	 * With a lane, buf is one of a ring of buffers: what a read brought is
	 * queued for the lane where it lies (no copy), and a buffer is written
	 * again only once the lane has hashed all it queued from it (ticket).
	 */
	char *ring[CSV_RING];
	size_t ring_cap[CSV_RING];
	uint64_t ring_ticket[CSV_RING];
	unsigned ring_at;
	bool eof;
	uint64_t lineno;	/* physical lines consumed */
	bool overlong;		/* the line just returned was longer than CSV_MAX_RECORD */
	struct recon_buf ovraw; /* its first CSV_RAW_MAX bytes */

	/* Transcoding (encoding other than UTF-8). */
	bool conv;
	iconv_t cd;
	struct recon_dbcs *dbcs; /* the double-byte encodings' own way, else NULL */
	struct recon_buf conv_out;
	size_t conv_bad; /* 1-based offset of the first bad byte in the last line, or 0 */
	bool rec_utf8;	 /* every line of the current record converted to known UTF-8 */

	/* Layout. */
	char delim, quote;
	bool has_strip;
	unsigned char strip[256];
	bool pfx_first[256]; /* first bytes of any stop or comment prefix */
	struct csv_prefixes stop, comment;
	size_t col[RECON_COL__COUNT];	  /* 0-based column per role, or CSV_NO_COL */
	uint8_t mapped[RECON_COL__COUNT]; /* the roles with a column (build_row), once open */
	size_t nmapped;
	size_t first_of[RECON_FIRST_OF_MAX]; /* a {"first_of": [...]} key's columns */
	size_t nfirst_of;
	size_t need;	/* header=false: fields needed (largest position) */
	size_t nfields; /* expected field count, 0 while unknown */
	bool header_done;
	bool seen_record; /* a record (header or data) was read: later comments are footer */
	uint64_t nrows;	  /* data records returned */
	bool pipe;	  /* a FIFO: read without blocking, each wait bounded (wait_input) */
	bool done;

	/* The current record. */
	struct csv_parser csv;
	bool rec_done; /* libcsv ended the record */
	struct csv_field *f;
	size_t nf, falloc;
	const char *fbase; /* the fields' text: the line itself, or fbuf */
	size_t flen;	   /* bytes from fbase covered by the fields */
	bool clean;	   /* fbase[0, flen) is known ASCII without NUL (split_plain) */
	/* split in one look (next_plain512): the bytes outside 0x01-0x7F lie in
	   fbase[odd_lo, odd_hi], none elsewhere (odd_span; else unknown) */
	bool odd_span;
	size_t odd_lo, odd_hi;
	struct recon_buf fbuf;
	struct recon_buf rawbuf;
	uint64_t rec_line;
	size_t rec_conv_bad;
	char reason[160];
	struct recon_raw_row row;

	/* Kept text for control totals. */
	struct recon_buf footer;
	uint64_t *footer_lines; /* line number of each kept footer line */
	size_t nfooter, afooter;
	struct recon_buf trailer;
	bool has_trailer;
	uint64_t trailer_line;

	/* Provider layouts, provenance and control totals. */
	char dguard;		     /* side->csv.delim_guard */
	struct recon_zip *zip;	     /* a .zip input: bytes come inflated from its member */
	struct recon_gz *gz;	     /* a .gz input: bytes come inflated from the stream */
	struct recon_pump *pump;     /* zip or gz: inflated ahead on a thread of its own */
	bool no_pump;		     /* no thread could be made: inflated as read */
	atomic_bool pump_stop;	     /* csv_close(): the pump's waits for a FIFO end */
	struct recon_sha256 sha;     /* of the file's bytes as read */
	struct recon_sha_lane *lane; /* a plain file's: sha, maybe on another thread */
	bool split512;		     /* the CPU has AVX-512 (BW): split_plain512() */
	bool sha_done;		     /* the whole file went through sha */
	struct recon_totals *totals; /* NULL: the side states none */
	struct recon_totals_cell *cells;
	size_t acells;
	bool no_header; /* header expected, none found */
};

static void csv_close(struct recon_source *src);

/* ---- line reader ---- */

/*
 * A pipe (a FIFO statement) is read without blocking: each read waits for
 * input at most the side's idle_timeout, so a FIFO nobody writes to (or a
 * writer that stalls) fails the run (RECON_EUNAVAIL, exit 69) instead of
 * holding it and the job's lock forever. Returns 0 when input (or its end) is
 * there.
 */
static int wait_input(struct csv_source *s, struct recon_err *err)
{
	int64_t limit = s->side->idle_timeout_ms > 0 ? s->side->idle_timeout_ms : CSV_IDLE_MS;
	/* a .gz's waits are the pump's, in slices: csv_close() may want it to stop */
	const int64_t slice = s->gz ? 100 : limit;
	struct pollfd p = {s->fd, POLLIN, 0};
	int64_t waited = 0;
	int rc;

	for (;;) {
		const int64_t t = limit - waited < slice ? limit - waited : slice;
		rc = poll(&p, 1, t > INT_MAX ? INT_MAX : (int)t);
		if (rc < 0 && errno == EINTR)
			continue;
		if (rc < 0)
			return recon_err_set(err, RECON_EIO, NULL, "cannot read '%s': %s", s->path,
					     strerror(errno));
		if (rc > 0)
			return 0;
		waited += t;
		if (atomic_load(&s->pump_stop))
			return recon_err_set(err, RECON_EIO, NULL, "'%s': reading stopped",
					     s->path);
		if (waited >= limit)
			return recon_err_set(err, RECON_EUNAVAIL, NULL,
					     "no data from '%s' for %lld ms (idle_timeout): is "
					     "anything writing to it?",
					     s->path, (long long)limit);
	}
}

/* Returns once the lane has hashed what was queued from ring buffer i, which may be written. */
static void ring_settle(struct csv_source *s, unsigned i)
{
	recon_sha_lane_wait(s->lane, s->ring_ticket[i]);
	s->ring_ticket[i] = 0;
}

/*
 * fill() with a lane, out of room: the unread input moves to the ring's next
 * buffer, once the lane has hashed what was queued from it (grown first if
 * need be: nothing in it is queued any more).
 */
static void ring_next(struct csv_source *s)
{
	const unsigned nx = (s->ring_at + 1) % CSV_RING;
	const size_t keep = s->end - s->pos;

	ring_settle(s, nx);
	if (!s->ring[nx] || s->ring_cap[nx] < keep + CSV_BLOCK) {
		size_t cap = s->ring[nx] ? s->ring_cap[nx] : 2 * CSV_BLOCK;
		while (cap < keep + CSV_BLOCK)
			cap = recon_st_mult(cap, 2);
		free(s->ring[nx]);
		s->ring[nx] = recon_xmalloc(cap);
		s->ring_cap[nx] = cap;
	}
	memcpy(s->ring[nx], s->buf + s->pos, keep);
	s->ring_at = nx;
	s->buf = s->ring[nx];
	s->cap = s->ring_cap[nx];
	s->pos = 0;
	s->end = keep;
}

/* The inflated bytes of a zip member or a .gz (recon_pump_fn: on the pump's thread). */
static long packed_read(void *arg, void *buf, size_t n, struct recon_err *err)
{
	struct csv_source *s = arg;

	return s->zip ? recon_zip_read(s->zip, buf, n, err) : recon_zip_gz_read(s->gz, buf, n, err);
}

static int fill(struct csv_source *s, struct recon_err *err)
{
	ssize_t n;

	if (s->lane && s->cap - s->end < CSV_BLOCK) {
		ring_next(s);
	} else if (s->cap - s->end < CSV_BLOCK) {
		if (s->pos) {
			memmove(s->buf, s->buf + s->pos, s->end - s->pos);
			s->end -= s->pos;
			s->pos = 0;
		}
		if (s->cap - s->end < CSV_BLOCK) {
			size_t cap = s->cap;

			while (cap - s->end < CSV_BLOCK)
				cap = recon_st_mult(cap, 2);
			s->buf = recon_xrealloc(s->buf, cap);
			s->cap = cap;
		}
	}
	if (s->zip || s->gz) {
		long z;

		if (!s->pump && !s->no_pump)
			s->no_pump = !(s->pump = recon_pump_new(packed_read, s, CSV_BLOCK));
		z = s->pump ? recon_pump_read(s->pump, s->buf + s->end, CSV_BLOCK, err)
			    : packed_read(s, s->buf + s->end, CSV_BLOCK, err);
		if (z < 0)
			return (int)z;
		n = (ssize_t)z;
	} else {
		int w;
		do {
			if (s->pipe && (w = wait_input(s, err)) < 0)
				return w;
			n = read(s->fd, s->buf + s->end, CSV_BLOCK);
		} while (n < 0 && (errno == EINTR || (s->pipe && errno == EAGAIN)));
		if (n < 0)
			return recon_err_set(err, RECON_EIO, NULL, "cannot read '%s': %s", s->path,
					     strerror(errno));
		if (s->lane) {
			const uint64_t t =
			    recon_sha_lane_update(s->lane, s->buf + s->end, (size_t)n);
			if (t > s->ring_ticket[s->ring_at])
				s->ring_ticket[s->ring_at] = t;
		} else
			recon_sha256_update(&s->sha, s->buf + s->end, (size_t)n);
	}
	if (n == 0) {
		s->eof = true;
		if (s->lane)
			recon_sha_lane_flush(s->lane);
		s->sha_done = true;
	}
	s->end += (size_t)n;
	return 0;
}

/*
 * Next physical line without its '\n': 1 and *line, *len (valid until the next
 * call), 0 at end of file, or < 0. A line over CSV_MAX_RECORD is dropped as it
 * streams by; it comes back with s->overlong set and *line its first bytes.
 */
static int next_line(struct csv_source *s, char **line, size_t *len, struct recon_err *err)
{
	int rc;

	s->overlong = false;
	for (;;) {
		size_t avail = s->end - s->pos;
		char *nl = memchr(s->buf + s->pos + s->scan, '\n', avail - s->scan);

		if (nl || (s->eof && (avail || s->overlong))) {
			size_t n = nl ? (size_t)(nl - (s->buf + s->pos)) : avail;

			*line = s->buf + s->pos;
			*len = n;
			s->pos += nl ? n + 1 : n;
			s->scan = 0;
			s->lineno++;
			if (!s->overlong && n > CSV_MAX_RECORD) {
				/* a last block can bring a too-long line in whole */
				s->overlong = true;
				recon_buf_reset(&s->ovraw);
				recon_buf_add(&s->ovraw, *line, CSV_RAW_MAX);
			}
			if (s->overlong) {
				*line = s->ovraw.s;
				*len = s->ovraw.len;
			}
			return 1;
		}
		if (s->eof)
			return 0;
		s->scan = avail;
		if (avail > CSV_MAX_RECORD) {
			if (!s->overlong) {
				s->overlong = true;
				recon_buf_reset(&s->ovraw);
				recon_buf_add(&s->ovraw, s->buf + s->pos, CSV_RAW_MAX);
			}
			/* the buffer is read into from its start again: what it queued, hashed */
			if (s->lane)
				ring_settle(s, s->ring_at);
			s->pos = s->end = s->scan = 0;
		}
		rc = fill(s, err);
		if (rc < 0)
			return rc;
	}
}

/* ---- transcoding ---- */

/*
 * Converts line to UTF-8 in conv_out; a bad byte is copied as is and noted in
 * conv_bad. true: the result is known UTF-8 without NUL (recon_dbcs's).
 */
static bool convert(struct csv_source *s, char **line, size_t *len)
{
	struct recon_buf *o = &s->conv_out;
	char *in = *line;
	size_t inleft = *len;

	s->conv_bad = 0;
	recon_buf_reset(o);
	recon_buf_grow(o, recon_st_add(recon_st_mult(inleft, 2), 16));
	if (s->dbcs) {
		bool nul;
		if (recon_dbcs_convert(s->dbcs, *line, *len, o->s, &o->len, &nul)) {
			o->s[o->len] = '\0';
			*line = o->s;
			*len = o->len;
			return !nul;
		}
		o->len = 0;
	}
	iconv(s->cd, NULL, NULL, NULL, NULL);
	for (;;) {
		char *out = o->s + o->len;
		size_t outleft = o->alloc - 1 - o->len;
		size_t r = iconv(s->cd, inleft ? &in : NULL, &inleft, &out, &outleft);

		o->len = (size_t)(out - o->s);
		if (r != (size_t)-1) {
			if (!inleft)
				break;
			continue;
		}
		if (errno == E2BIG) {
			recon_buf_grow(o, recon_st_add(recon_st_mult(inleft, 4), 16));
			continue;
		}
		/* EILSEQ, or EINVAL (a sequence cut short by the end of the line) */
		if (!s->conv_bad)
			s->conv_bad = (size_t)(in - *line) + 1;
		recon_buf_grow(o, 1);
		o->s[o->len++] = *in++;
		inleft--;
	}
	o->s[o->len] = '\0';
	*line = o->s;
	*len = o->len;
	return false;
}

/* ---- helpers ---- */

static bool starts_with_any(const struct csv_prefixes *p, const char *line, size_t len)
{
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].len <= len && !memcmp(line, p->v[i].s, p->v[i].len))
			return true;
	return false;
}

static void keep_line(struct recon_buf *b, const char *line, size_t len)
{
	if (b->len + len + 1 > CSV_KEEP_MAX)
		return;
	recon_buf_add(b, line, len);
	recon_buf_addc(b, '\n');
}

static void raw_add(struct recon_buf *b, const char *p, size_t n)
{
	if (b->len >= CSV_RAW_MAX)
		return;
	recon_buf_add(b, p, n < CSV_RAW_MAX - b->len ? n : CSV_RAW_MAX - b->len);
}

static void add_field(struct csv_source *s, size_t off, size_t len)
{
	if (s->nf == s->falloc)
		recon_grow((void **)&s->f, &s->falloc, s->nf + 1, sizeof(*s->f));
	s->f[s->nf].off = off;
	s->f[s->nf].len = len;
	s->nf++;
}

static void on_field(void *p, size_t n, void *data)
{
	struct csv_source *s = data;

	add_field(s, s->fbuf.len, n);
	recon_buf_add(&s->fbuf, p, n);
}

static void on_row(int c, void *data)
{
	struct csv_source *s = data;

	(void)c;
	s->rec_done = true;
}

static int never_space(unsigned char c)
{
	(void)c;
	return 0;
}

static int is_newline(unsigned char c)
{
	return c == '\n';
}

static void set_reason(struct csv_source *s, const char *fmt, ...) RECON_PRINTF(2, 3);

static void set_reason(struct csv_source *s, const char *fmt, ...)
{
	va_list ap;

	if (s->reason[0])
		return;
	va_start(ap, fmt);
	vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
	va_end(ap);
}

static void parser_reset(struct csv_source *s)
{
	csv_fini(&s->csv, NULL, NULL, NULL);
}

/* Splits an unquoted line in place. */
static void split_line(struct csv_source *s, const char *line, size_t len)
{
	const char *p = line, *e = line + len;
	const char delim = s->delim;
	/* the header line is plain; data cells start with the guard */
	const char guard = s->side->csv.header && !s->header_done ? '\0' : s->dguard;

	s->nf = 0;
	for (;;) {
		const char *d = memchr(p, delim, (size_t)(e - p));

		while (guard && d && (d + 1 >= e || d[1] != guard))
			d = memchr(d + 1, delim, (size_t)(e - d - 1));
		if (!d) {
			add_field(s, (size_t)(p - line), (size_t)(e - p));
			break;
		}
		add_field(s, (size_t)(p - line), (size_t)(d - p));
		p = d + 1;
	}
	s->fbase = line;
	s->flen = len;
}

/* The delimiters at line[base + k] for the set bits k of m: fields from *start on. */
static inline void split_mask(struct csv_source *s, uint64_t m, size_t base, size_t *start)
{
	for (; m; m &= m - 1) {
		size_t d = base + (size_t)__builtin_ctzll(m);
		add_field(s, *start, d - *start);
		*start = d + 1;
	}
}

/* The last field, from start to len, and the line the fields lie in. */
static void split_end(struct csv_source *s, const char *line, size_t start, size_t len, bool odd)
{
	add_field(s, start, len - start);
	s->fbase = line;
	s->flen = len;
	s->clean = !odd;
	s->odd_span = false;
}

/*
 * Splits a line without guard in one pass, 16 bytes at a time: delimiters,
 * the quote character and bytes outside 0x01-0x7F (for check_utf8) in the
 * same look (split_line and memchr for the quote took three). False when the
 * line holds the quote character: libcsv's then, the fields left undefined.
 */
static bool split_plain(struct csv_source *s, const char *line, size_t len)
{
	const unsigned char *p = (const unsigned char *)line;
	const unsigned char delim = (unsigned char)s->delim, quote = (unsigned char)s->quote;
	size_t i = 0, start = 0;
	unsigned odd = 0; /* a byte outside 0x01-0x7F was seen */

	s->nf = 0;
#ifdef __SSE2__
	{
		const __m128i vd = _mm_set1_epi8((char)delim), vq = _mm_set1_epi8((char)quote);
		const __m128i vz = _mm_setzero_si128();
		__m128i v;
		unsigned m;

		for (; i + 16 <= len; i += 16) {
			v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
			if (quote && _mm_movemask_epi8(_mm_cmpeq_epi8(v, vq)))
				return false;
			odd |= (unsigned)_mm_movemask_epi8(_mm_or_si128(v, _mm_cmpeq_epi8(v, vz)));
			split_mask(s, (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vd)), i,
				   &start);
		}
		if (i < len && len >= 16) {
			/* the last 16 bytes, those before i masked off */
			const unsigned seen = (1u << (i - (len - 16))) - 1;

			v = _mm_loadu_si128((const __m128i *)(const void *)(p + len - 16));
			if (quote && (_mm_movemask_epi8(_mm_cmpeq_epi8(v, vq)) & ~seen))
				return false;
			odd |= (unsigned)_mm_movemask_epi8(_mm_or_si128(v, _mm_cmpeq_epi8(v, vz))) &
			       ~seen;
			m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, vd)) & ~seen;
			split_mask(s, m, len - 16, &start);
			i = len;
		}
	}
#endif
	for (; i < len; i++) {
		const unsigned char c = p[i];

		if (quote && c == quote)
			return false;
		odd |= c - 1u >= 0x7Fu;
		if (c == delim) {
			add_field(s, start, i - start);
			start = i + 1;
		}
	}
	split_end(s, line, start, len, odd != 0);
	return true;
}

#ifdef HAVE_SPLIT512
/* The bytes of a look at p + i that lie before end: all 64, or the first end - i. */
__attribute__((target("avx512f,avx512bw"))) static inline __mmask64 live512(size_t i, size_t end)
{
	return end - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (end - i)) - 1;
}

/*
 * One look of split_plain512() and next512(): the bytes `in` of v, the 64 at
 * offset i (live: those read). false at the quote character; else the
 * delimiters split (split_mask) and *lo, *hi keep where the bytes outside
 * 0x01-0x7F ((byte - 1) above 0x7E) lie (*lo == SIZE_MAX: none yet), so that
 * check_utf8() looks at those alone. guard: a guarded line (struct
 * recon_side's delim_guard: WeChat's ",`"), split only where the guard
 * follows the delimiter; g_next: the guard is the byte after the look's 64.
 */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline bool
look512(struct csv_source *s, __m512i v, __mmask64 live, __mmask64 in, bool guard, bool g_next,
	size_t i, size_t *start, size_t *lo, size_t *hi)
{
	const uint64_t odd = _mm512_mask_cmpgt_epu8_mask(
	    in, _mm512_sub_epi8(v, _mm512_set1_epi8(1)), _mm512_set1_epi8(0x7E));
	uint64_t d = _mm512_mask_cmpeq_epi8_mask(in, v, _mm512_set1_epi8(s->delim));

	if (s->quote && _mm512_mask_cmpeq_epi8_mask(in, v, _mm512_set1_epi8(s->quote)))
		return false;
	if (odd) {
		if (*lo == SIZE_MAX)
			*lo = i + (size_t)__builtin_ctzll(odd);
		*hi = i + 63 - (size_t)__builtin_clzll(odd);
	}
	if (guard)
		d &= (uint64_t)_mm512_mask_cmpeq_epi8_mask(live, v, _mm512_set1_epi8(s->dguard)) >>
			 1 |
		     (uint64_t)g_next << 63;
	split_mask(s, d, i, start);
	return true;
}

/* split_end() of a line split by looks: the span of its odd bytes, if any (odd_span). */
static void split_end_span(struct csv_source *s, const char *line, size_t start, size_t len,
			   size_t lo, size_t hi)
{
	split_end(s, line, start, len, lo != SIZE_MAX);
	s->odd_span = lo != SIZE_MAX;
	s->odd_lo = lo;
	s->odd_hi = hi;
}

/*
 * split_plain() 64 bytes at a time with AVX-512 (a line of a statement is
 * one or two looks, not five or six): its result, the same way. The last
 * look's bytes past the line are masked off, never read.
 */
__attribute__((target("avx512f,avx512bw"))) static bool split_plain512(struct csv_source *s,
								       const char *line, size_t len)
{
	const unsigned char *p = (const unsigned char *)line;
	size_t start = 0, lo = SIZE_MAX, hi = 0;

	s->nf = 0;
	for (size_t i = 0; i < len; i += 64) {
		const __mmask64 live = live512(i, len);

		if (!look512(s, _mm512_maskz_loadu_epi8(live, p + i), live, live, false, false, i,
			     &start, &lo, &hi))
			return false;
	}
	split_end_span(s, line, start, len, lo, hi);
	return true;
}

/*
 * The common next line at once: its end found in the same look that splits
 * it (one pass over its bytes, not memchr() then split_plain512()). 1: the
 * line (without '\r'), its fields in s->f as split_plain512() leaves them,
 * consumed and counted as next_line() would. 0, nothing consumed (the fields
 * undefined): read_record()'s general way is for it, as for a line not whole
 * in the buffer yet, with the quote character, empty, too long, or whose
 * first byte may begin a stop or comment prefix. guard: a guarded data line
 * (WeChat's), split where the guard follows the delimiter (split_line()'s
 * rule).
 */
__attribute__((target("avx512f,avx512bw"), always_inline)) static inline int
next512(struct csv_source *s, char **line, size_t *len, bool guard)
{
	const unsigned char *p = (const unsigned char *)s->buf + s->pos;
	const size_t avail = s->end - s->pos;
	size_t start = 0, n = 0, l, lo = SIZE_MAX, hi = 0;
	bool found = false;

	if (!avail || s->pfx_first[p[0]])
		return 0;
	s->nf = 0;
	for (size_t i = 0; i < avail && !found; i += 64) {
		const __mmask64 live = live512(i, avail);
		const __m512i v = _mm512_maskz_loadu_epi8(live, p + i);
		const __mmask64 nl = _mm512_mask_cmpeq_epi8_mask(live, v, _mm512_set1_epi8('\n'));
		const bool g_next =
		    guard && i + 64 < avail && p[i + 64] == (unsigned char)s->dguard;

		/* the bytes before the line's end */
		if (!look512(s, v, live, nl ? (nl & (0 - nl)) - 1 : live, guard, g_next, i, &start,
			     &lo, &hi))
			return 0;
		if (nl) {
			n = i + (size_t)__builtin_ctzll(nl);
			found = true;
		}
	}
	if (!found || n > CSV_MAX_RECORD)
		return 0;
	l = n - (n && p[n - 1] == '\r');
	if (!l || start > l)
		return 0;
	split_end_span(s, (const char *)p, start, l, lo, hi);
	*line = (char *)s->buf + s->pos;
	*len = l;
	s->overlong = false;
	s->pos += n + 1;
	s->scan = 0;
	s->lineno++;
	return 1;
}

__attribute__((target("avx512f,avx512bw"))) static int next_plain512(struct csv_source *s,
								     char **line, size_t *len)
{
	return next512(s, line, len, false);
}

__attribute__((target("avx512f,avx512bw"))) static int next_guard512(struct csv_source *s,
								     char **line, size_t *len)
{
	return next512(s, line, len, true);
}
#endif

/* split_plain() the fastest way this CPU has. */
static inline bool split_plain_any(struct csv_source *s, const char *line, size_t len)
{
#ifdef HAVE_SPLIT512
	if (s->split512)
		return split_plain512(s, line, len);
#endif
	return split_plain(s, line, len);
}

static size_t count_char(const char *p, size_t n, char c)
{
	size_t k = 0;
	const char *e = p + n;

	while ((p = memchr(p, c, (size_t)(e - p))) != NULL) {
		k++;
		p++;
	}
	return k;
}

/*
 * Reads the next record into s->f/fbase (with reason, rec_line, raw).
 * Returns 1, 0 when the data is over (end of file or stop line), or < 0.
 */
static int read_record(struct csv_source *s, struct recon_err *err)
{
	const struct recon_side *side = s->side;
	bool in_rec = false, had_cr, guarded;
	unsigned parity = 0;
	size_t rec_bytes = 0;
	char *line;
	size_t len, used;
	int rc;

	s->reason[0] = '\0';
	s->rec_conv_bad = 0;
	s->clean = false;
	s->odd_span = false;
	s->rec_utf8 = s->conv;
#ifdef HAVE_SPLIT512
	/* past the first line (a BOM) and those skipped, no transcoding; a guarded
	   side's data lines (past its plain header) split on the guard */
	if (s->split512 && !s->conv && s->lineno >= 1 && s->lineno >= side->csv.skip_lines &&
	    (!s->dguard ? next_plain512(s, &line, &len)
			: s->dguard != '\r' && (!side->csv.header || s->header_done) &&
			      next_guard512(s, &line, &len))) {
		s->rec_line = s->lineno;
		s->rec_conv_bad = s->conv_bad;
		s->row.raw = line;
		s->row.raw_len = len < CSV_RAW_MAX ? len : CSV_RAW_MAX;
		return 1;
	}
#endif
	for (;;) {
		rc = next_line(s, &line, &len, err);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			if (!in_rec)
				return 0;
			parser_reset(s);
			set_reason(s, "unterminated quoted field");
			goto libcsv_out;
		}
		if (s->lineno <= side->csv.skip_lines)
			continue;
		if (s->overlong) {
			if (in_rec) {
				parser_reset(s);
				set_reason(s, "record longer than %zu bytes", CSV_MAX_RECORD);
				goto libcsv_out;
			}
			s->rec_line = s->lineno;
			s->nf = 0;
			s->fbase = line;
			s->flen = 0;
			s->row.raw = line;
			s->row.raw_len = len;
			set_reason(s, "record longer than %zu bytes", CSV_MAX_RECORD);
			return 1;
		}
		had_cr = len && line[len - 1] == '\r';
		len -= had_cr;
		if (s->conv && !convert(s, &line, &len))
			s->rec_utf8 = false;
		if (s->lineno == 1 && len >= 3 && !memcmp(line, "\xEF\xBB\xBF", 3)) {
			line += 3;
			len -= 3;
		}
		if (!in_rec) {
			if (!len)
				continue;
			if (s->pfx_first[(unsigned char)line[0]]) {
				if (starts_with_any(&s->stop, line, len)) {
					s->has_trailer = true;
					s->trailer_line = s->lineno;
					keep_line(&s->trailer, line, len);
					while (s->trailer.len < CSV_KEEP_MAX) {
						rc = next_line(s, &line, &len, err);
						if (rc <= 0)
							return rc;
						len -= len && line[len - 1] == '\r';
						if (s->conv && !s->overlong)
							(void)convert(s, &line, &len);
						keep_line(&s->trailer, line, len);
					}
					return 0;
				}
				if (starts_with_any(&s->comment, line, len)) {
					if (s->seen_record &&
					    s->footer.len + len + 1 <= CSV_KEEP_MAX) {
						keep_line(&s->footer, line, len);
						recon_grow((void **)&s->footer_lines, &s->afooter,
							   s->nfooter + 1,
							   sizeof(*s->footer_lines));
						s->footer_lines[s->nfooter++] = s->lineno;
					}
					continue;
				}
			}
			s->rec_line = s->lineno;
			s->rec_conv_bad = s->conv_bad;
			/* data cells start with the guard: the general splitter (the header is
			 * plain) */
			guarded = s->dguard && (!side->csv.header || s->header_done);
			if (guarded ? !s->quote || !memchr(line, s->quote, len)
				    : split_plain_any(s, line, len)) {
				if (guarded)
					split_line(s, line, len);
				s->row.raw = line;
				s->row.raw_len = len < CSV_RAW_MAX ? len : CSV_RAW_MAX;
				return 1;
			}
			in_rec = true;
			s->nf = 0;
			s->rec_done = false;
			recon_buf_reset(&s->fbuf);
			recon_buf_reset(&s->rawbuf);
		} else {
			raw_add(&s->rawbuf, "\n", 1);
			if (!s->rec_conv_bad)
				s->rec_conv_bad = s->conv_bad;
			rec_bytes++;
		}
		rec_bytes += len;
		if (rec_bytes > CSV_MAX_RECORD) {
			parser_reset(s);
			set_reason(s, "record longer than %zu bytes", CSV_MAX_RECORD);
			goto libcsv_out;
		}
		raw_add(&s->rawbuf, line, len);
		/*
		 * In strict mode every quote opens, closes or doubles inside a
		 * quoted field, so an odd count means the line ends inside one:
		 * its newline (with the '\r', if any) belongs to the cell.
		 */
		parity ^= (unsigned)(count_char(line, len, s->quote) & 1);
		used = csv_parse(&s->csv, line, len, on_field, on_row, s);
		if (used < len) {
			set_reason(s, "misplaced quote character in field %zu", s->nf + 1);
			parser_reset(s);
			goto libcsv_out;
		}
		if (parity) {
			if (csv_parse(&s->csv, &"\r\n"[!had_cr], 1 + had_cr, on_field, on_row, s) !=
			    1u + had_cr) {
				set_reason(s, "misplaced quote character in field %zu", s->nf + 1);
				parser_reset(s);
				goto libcsv_out;
			}
			continue;
		}
		(void)csv_parse(&s->csv, "\n", 1, on_field, on_row, s);
		if (!s->rec_done) { /* cannot happen outside quotes; never loop on it */
			parser_reset(s);
			set_reason(s, "misplaced quote character in field %zu", s->nf + 1);
		}
		goto libcsv_out;
	}
libcsv_out:
	s->fbase = s->fbuf.s;
	s->flen = s->fbuf.len;
	s->row.raw = s->rawbuf.s;
	s->row.raw_len = s->rawbuf.len;
	return 1;
}

/* ---- validation ---- */

#define ASCII_HI 0x8080808080808080ULL
#define ASCII_LO 0x0101010101010101ULL

/* True when p[0..n) is ASCII without NUL (8 bytes at a time). */
static bool ascii_clean(const char *p, size_t n)
{
	uint64_t acc = 0, w;
	size_t i = 0;

	/* a byte is bad when its top bit is set or it is 0 (w - 1 borrows into the top bit) */
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		acc |= (w | ((w - ASCII_LO) & ~w)) & ASCII_HI;
	}
	if (acc)
		return false;
	for (; i < n; i++)
		if ((unsigned char)p[i] - 1u >= 0x7Fu)
			return false;
	return true;
}

/* Offset of the first byte that breaks UTF-8 (NUL included), or SIZE_MAX. */
static size_t utf8_bad(const unsigned char *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned c = p[i];
		size_t k;
		unsigned lo = 0x80, hi = 0xBF;

		if (c >= 0x01 && c < 0x80) {
			/* skip ASCII runs 8 bytes at a time */
			for (i++; i + 8 <= n; i += 8) {
				uint64_t w;

				memcpy(&w, p + i, 8);
				if ((w | ((w - ASCII_LO) & ~w)) & ASCII_HI)
					break;
			}
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF) {
			k = 1;
		} else if (c >= 0xE0 && c <= 0xEF) {
			k = 2;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			k = 3;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		} else {
			return i;
		}
		if (n - i <= k)
			return i;
		if (p[i + 1] < lo || p[i + 1] > hi)
			return i;
		for (size_t j = 2; j <= k; j++)
			if ((p[i + j] & 0xC0) != 0x80)
				return i;
		i += k + 1;
	}
	return SIZE_MAX;
}

static void check_utf8(struct csv_source *s)
{
	const unsigned char *base = (const unsigned char *)s->fbase;
	size_t bad;

	/* rec_utf8: converted to UTF-8 by recon_dbcs, which says it is valid */
	if (s->clean || s->rec_utf8 || ascii_clean(s->fbase, s->flen))
		return;
	if (s->fbase != s->fbuf.s) {
		/*
		 * Split in place: the cells lie in one line between ASCII
		 * delimiters, which no valid sequence can straddle, so one
		 * pass over the line judges every cell.
		 */
		if (s->odd_span) {
			/* the bytes around the span are ASCII without NUL */
			bad = utf8_bad(base + s->odd_lo, s->odd_hi - s->odd_lo + 1);
			if (bad != SIZE_MAX)
				bad += s->odd_lo;
		} else {
			bad = utf8_bad(base, s->flen);
		}
		if (bad == SIZE_MAX)
			return;
		for (size_t i = 0; i < s->nf; i++)
			if (bad < s->f[i].off + s->f[i].len) {
				set_reason(s, "invalid UTF-8 byte 0x%02X at field %zu", base[bad],
					   i + 1);
				return;
			}
		return;
	}
	for (size_t i = 0; i < s->nf; i++) {
		const unsigned char *p = base + s->f[i].off;

		bad = utf8_bad(p, s->f[i].len);
		if (bad != SIZE_MAX) {
			set_reason(s, "invalid UTF-8 byte 0x%02X at field %zu", p[bad], i + 1);
			return;
		}
	}
}

/* ---- header and rows ---- */

/* A header cell without blanks and guard characters around it. */
static void header_cell(const struct csv_source *s, size_t i, const char **cp, size_t *cn)
{
	const char *p = s->fbase + s->f[i].off;
	size_t n = s->f[i].len;

	while (n && (s->strip[(unsigned char)*p] || *p == ' ' || (*p >= '\t' && *p <= '\r'))) {
		p++;
		n--;
	}
	while (n && (s->strip[(unsigned char)p[n - 1]] || p[n - 1] == ' ' ||
		     (p[n - 1] >= '\t' && p[n - 1] <= '\r')))
		n--;
	*cp = p;
	*cn = n;
}

/* Index of the header cell named `name`: 1 and *at, 0 when absent, -1 when it appears twice. */
static int find_column(const struct csv_source *s, const char *name, size_t *at)
{
	size_t nlen = strlen(name), found = 0;

	for (size_t i = 0; i < s->nf; i++) {
		const char *p;
		size_t n;

		header_cell(s, i, &p, &n);
		if (n == nlen && !memcmp(p, name, n)) {
			if (found++)
				return -1;
			*at = i;
		}
	}
	return found ? 1 : 0;
}

static bool is_utf8_name(const char *enc);

/* The first bytes of a plain file as stored (not a .zip or .gz), NUL-terminated; 0 if none. */
static size_t raw_head(const struct csv_source *s, char *buf, size_t size)
{
	ssize_t n;

	if (s->zip || s->gz || s->fd < 0 || size < 2)
		return 0;
	n = pread(s->fd, buf, size - 1, 0);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (size_t)n;
}

/* The text between <tag> and </tag> in an XML reply, CDATA unwrapped, into out. */
static bool xml_text(const char *x, const char *tag, char *out, size_t size)
{
	char open[48], close[48];
	const char *a, *b;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	if (!(a = strstr(x, open)) || !(b = strstr(a, close)))
		return false;
	a += strlen(open);
	if (!strncmp(a, "<![CDATA[", 9) && b - a >= 12 && !strncmp(b - 3, "]]>", 3)) {
		a += 9;
		b -= 3;
	}
	snprintf(out, size, "%.*s", (int)(b - a < 120 ? b - a : 120), a);
	return true;
}

/* sub_msg, msg or code of an error reply object, at the top or one level down (Alipay). */
static bool json_reply(json_t *o, char *out, size_t size)
{
	static const char *const keys[] = {"sub_msg", "return_msg", "msg",
					   "message", "sub_code",   "code"};
	const char *k;
	json_t *v;

	if (!json_is_object(o))
		return false;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		v = json_object_get(o, keys[i]);
		if (json_is_string(v)) {
			snprintf(out, size, "%.120s", json_string_value(v));
			return true;
		}
	}
	json_object_foreach(o, k, v)
	{
		if (json_is_object(v) && json_reply(v, out, size))
			return true;
	}
	return false;
}

/*
 * A provider's error reply saved in place of the statement (WeChat's XML
 * "No Bill Exist", Alipay's error JSON): what the provider answered, or false.
 */
static bool provider_reply(const char *head, char *out, size_t size)
{
	const char *p = head;
	bool found = false;

	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')
		p++;
	if (*p == '<')
		return xml_text(p, "return_msg", out, size) ||
		       xml_text(p, "err_code_des", out, size) ||
		       xml_text(p, "return_code", out, size);
	if (*p == '{') {
		json_t *o = json_loads(p, JSON_DISABLE_EOF_CHECK, NULL);
		found = json_reply(o, out, size);
		json_decref(o);
	}
	return found;
}

/*
 * Why a header may lack `name` though the file is a statement: it reads as
 * another encoding. A hint for the message ("" when nothing tells).
 */
static void encoding_hint(const struct csv_source *s, const char *head, size_t n, const char *name,
			  char *out, size_t size)
{
	static const char *const guesses[] = {"GB18030", "BIG5"};
	const char *enc = s->side->csv.encoding;

	out[0] = '\0';
	if (!is_utf8_name(enc)) {
		/* the profile reads GBK (say), the bytes hold the name in UTF-8 */
		if (strstr(head, name) && utf8_bad((const unsigned char *)head, n) == SIZE_MAX)
			snprintf(out, size,
				 ": this looks like UTF-8; the profile reads %s: set \"encoding\": "
				 "\"UTF-8\" on the side",
				 enc);
		return;
	}
	/* the profile reads UTF-8, the name shows up once the bytes are read as GBK */
	for (size_t g = 0; g < sizeof(guesses) / sizeof(guesses[0]); g++) {
		const char *shown = g == 0 ? "GBK" : guesses[g];
		iconv_t cd = iconv_open("UTF-8", guesses[g]);
		char conv[8192], *in = (char *)head, *o = conv;
		size_t il = n, ol = sizeof(conv) - 1;

		if (cd == (iconv_t)-1)
			continue;
		(void)iconv(cd, &in, &il, &o, &ol);
		iconv_close(cd);
		*o = '\0';
		if (strstr(conv, name)) {
			snprintf(out, size,
				 ": this looks like %s; the profile reads UTF-8: set \"encoding\": "
				 "\"%s\" on the side",
				 shown, shown);
			return;
		}
	}
}

/*
 * The header lacks a column: say why when the file tells. A provider's error
 * reply is RECON_EUNAVAIL (the statement is not there yet, or the day had no
 * trades); else RECON_EINPUT, with an encoding hint when one fits.
 */
static int header_missing(struct csv_source *s, const char *where, const char *name,
			  const char *also, int role, struct recon_err *err)
{
	char head[4096], said[160], hint[160] = "";
	size_t n = raw_head(s, head, sizeof(head));

	if (n && provider_reply(head, said, sizeof(said)))
		return recon_err_set(
		    err, RECON_EUNAVAIL, where,
		    "the provider answered: %s: this file is its error reply, not a "
		    "statement; download the bill again (a day without trades has an "
		    "empty bill, which reconciles as no entries)",
		    said);
	if (n)
		encoding_hint(s, head, n, name, hint, sizeof(hint));
	return recon_err_set(err, RECON_EINPUT, where,
			     "column '%s'%s (role '%s') not found in header%s", name, also,
			     recon_col_name((enum recon_col)role), hint);
}

static int process_header(struct csv_source *s, struct recon_err *err)
{
	const struct recon_side *side = s->side;
	char where[160];

	snprintf(where, sizeof(where), "%s:%llu", s->path, (unsigned long long)s->rec_line);
	for (int r = 0; r < RECON_COL__COUNT; r++) {
		const char *name = side->cols[r];
		char *const *alt = side->alt_cols[r];
		int found = 0;

		if (!name)
			continue;
		/* the role's column, else its alternatives in order: the first present wins */
		for (size_t k = 0; !found; k++) {
			const char *cand = k ? (alt ? alt[k - 1] : NULL) : name;

			if (!cand)
				break;
			found = find_column(s, cand, &s->col[r]);
			if (found < 0)
				return recon_err_set(err, RECON_EINPUT, where,
						     "column '%s' (role '%s') appears more than "
						     "once in header",
						     cand, recon_col_name((enum recon_col)r));
		}
		if (!found) {
			char also[200] = "";

			for (size_t k = 0; alt && alt[k]; k++) {
				size_t used = strlen(also);
				snprintf(also + used, sizeof(also) - used, " or '%s'", alt[k]);
			}
			return header_missing(s, where, name, also, r, err);
		}
	}
	/* a first_of key: every column it names is in the header */
	for (size_t k = 0; side->key_first_of && side->key_first_of[k]; k++) {
		const char *cand = side->key_first_of[k];
		int found = find_column(s, cand, &s->first_of[k]);

		if (found < 0)
			return recon_err_set(err, RECON_EINPUT, where,
					     "column '%s' (role 'key', first_of) appears more than "
					     "once in header",
					     cand);
		if (!found)
			return header_missing(s, where, cand, " (first_of)", RECON_COL_KEY0, err);
		s->nfirst_of = k + 1;
	}
	if (s->totals) {
		recon_grow((void **)&s->cells, &s->acells, s->nf + 1, sizeof(*s->cells));
		for (size_t i = 0; i < s->nf; i++)
			header_cell(s, i, &s->cells[i].p, &s->cells[i].len);
		recon_totals_bind(s->totals, s->cells, s->nf, s->col[RECON_COL_ENTRY_TYPE]);
	}
	s->nfields = s->nf;
	s->header_done = true;
	return 0;
}

/* A {"first_of": [...]} key: the first of its columns that is not empty once trimmed. */
static void first_of_key(struct csv_source *s, struct recon_raw_row *row)
{
	for (size_t k = 0; k < s->nfirst_of; k++) {
		size_t c = s->first_of[k];
		const char *p;
		size_t n;

		if (c >= s->nf)
			continue;
		p = s->fbase + s->f[c].off;
		n = s->f[c].len;
		while (n && (s->strip[(unsigned char)*p] || *p == ' ' || *p == '\t')) {
			p++;
			n--;
		}
		while (n &&
		       (s->strip[(unsigned char)p[n - 1]] || p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (n) {
			row->val[RECON_COL_KEY0] = p;
			row->len[RECON_COL_KEY0] = n;
			return;
		}
	}
	/* all empty: normalize rejects the row ("empty key") */
}

static void build_row(struct csv_source *s)
{
	struct recon_raw_row *row = &s->row;

	if (s->rec_conv_bad)
		set_reason(s, "invalid %s byte sequence at byte %zu", s->side->csv.encoding,
			   s->rec_conv_bad);
	if (!s->reason[0]) {
		if (!s->side->csv.header && s->nf < s->need)
			set_reason(s, "expected at least %zu fields, found %zu", s->need, s->nf);
		else if (!s->nfields)
			s->nfields = s->nf;
		if (s->nf != s->nfields)
			set_reason(s, "expected %zu fields, found %zu", s->nfields, s->nf);
	}
	if (!s->reason[0])
		check_utf8(s);
	/* the roles without a column stay NULL (the source is zeroed), but for first_of's key */
	if (s->nfirst_of && s->col[RECON_COL_KEY0] == CSV_NO_COL) {
		row->val[RECON_COL_KEY0] = NULL;
		row->len[RECON_COL_KEY0] = 0;
	}
	for (size_t i = 0; i < s->nmapped; i++) {
		const int r = s->mapped[i];
		size_t c = s->col[r];
		const char *p;
		size_t n;

		if (c >= s->nf) {
			row->val[r] = NULL;
			row->len[r] = 0;
			continue;
		}
		p = s->fbase + s->f[c].off;
		n = s->f[c].len;
		if (s->has_strip) {
			while (n && s->strip[(unsigned char)*p]) {
				p++;
				n--;
			}
			while (n && s->strip[(unsigned char)p[n - 1]])
				n--;
		}
		row->val[r] = p;
		row->len[r] = n;
	}
	if (s->nfirst_of)
		first_of_key(s, row);
	row->line = s->rec_line;
	row->reject = s->reason[0] ? s->reason : NULL;
}

/* Feeds the record just built to the control totals. */
static void totals_add(struct csv_source *s)
{
	recon_grow((void **)&s->cells, &s->acells, s->nf + 1, sizeof(*s->cells));
	for (size_t i = 0; i < s->nf; i++) {
		s->cells[i].p = s->fbase + s->f[i].off;
		s->cells[i].len = s->f[i].len;
	}
	recon_totals_add(s->totals, s->cells, s->nf, s->rec_line, s->reason[0] ? s->reason : NULL);
}

/*
 * The records are over: the rest of the file goes through the hash (and a
 * zip member's CRC check), then the statement must be whole.
 */
static int finish_input(struct csv_source *s, struct recon_err *err)
{
	const struct recon_side *side = s->side;
	char where[160];
	bool stated = false;
	int rc;

	while (!s->eof) {
		/* nothing left to parse: all consumed, so that fill() reads past it or
		   moves to the ring's next buffer (not over what the lane has queued) */
		s->pos = s->end;
		s->scan = 0;
		if ((rc = fill(s, err)) < 0)
			return rc;
	}
	if (s->no_header && side->csv.reject_empty) {
		snprintf(where, sizeof(where), "%s:%llu", s->path,
			 (unsigned long long)(s->lineno ? s->lineno : 1));
		return recon_err_set(err, RECON_EINPUT, where,
				     "%s: no header line (expected the statement's column names)",
				     s->lineno ? "no records" : "empty file");
	}
	if (s->totals) {
		uint64_t *lines = NULL;
		const char *text;
		size_t len, n = 0;

		if (side->csv.totals.in == RECON_TOTALS_TRAILER) {
			text = s->has_trailer ? s->trailer.s : NULL;
			len = s->has_trailer ? s->trailer.len : 0;
			for (size_t i = 0; i < len; i++)
				n += text[i] == '\n';
			lines = recon_xcalloc(n ? n : 1, sizeof(*lines));
			for (size_t i = 0; i < n; i++)
				lines[i] = s->trailer_line + i;
		} else {
			text = s->footer.len ? s->footer.s : NULL;
			len = s->footer.len;
			n = s->nfooter;
		}
		rc = recon_totals_check(s->totals, text, len, lines ? lines : s->footer_lines, n,
					s->path, s->lineno, err);
		free(lines);
		if (rc < 0)
			return rc;
		stated = text != NULL; /* checked: the file says how many rows it has */
	}
	/*
	 * No entries at all: a 0-byte or header-only file is a statement not yet
	 * (or not fully) published far more often than a day without trades, and
	 * reconciling it would close the day for good. Only a job that expects
	 * empty days, or a file whose control totals say 0 rows, gets through.
	 */
	if (!s->nrows && !side->csv.allow_empty && !stated) {
		snprintf(where, sizeof(where), "%s:%llu", s->path,
			 (unsigned long long)(s->lineno ? s->lineno : 1));
		return recon_err_set(err, RECON_EINPUT, where,
				     "%s: no entries (a statement not yet published, or cut "
				     "short?); set \"allow_empty\": true on the %s side if days "
				     "without entries are expected",
				     s->lineno ? "no records" : "empty file",
				     side->role ? side->role : "csv");
	}
	return 0;
}

static int csv_next(struct recon_source *src, const struct recon_raw_row **row,
		    struct recon_err *err)
{
	struct csv_source *s = (struct csv_source *)src;
	int rc;

	if (s->done)
		return RECON_DONE;
	rc = s->no_header ? 0 : read_record(s, err);
	if (rc <= 0) {
		s->done = true;
		return rc < 0 ? rc : finish_input(s, err);
	}
	s->seen_record = true;
	s->nrows++;
	build_row(s);
	if (s->totals)
		totals_add(s);
	*row = &s->row;
	return RECON_ROW;
}

/* ---- open / close ---- */

static bool is_utf8_name(const char *enc)
{
	return !enc || !strcasecmp(enc, "UTF-8") || !strcasecmp(enc, "UTF8");
}

static void prefixes_init(struct csv_prefixes *p, char *const *v, bool *first)
{
	size_t n = 0;

	while (v && v[n])
		n++;
	p->v = recon_xcalloc(n ? n : 1, sizeof(*p->v));
	p->n = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(v[i]);

		if (!len)
			continue; /* an empty prefix would match every line */
		p->v[p->n].s = v[i];
		p->v[p->n].len = len;
		p->n++;
		first[(unsigned char)v[i][0]] = true;
	}
}

static int layout_init(struct csv_source *s, struct recon_err *err)
{
	const struct recon_side *side = s->side;
	const char *role = side->role ? side->role : "csv";

	s->delim = side->csv.delimiter ? side->csv.delimiter : ',';
	s->quote = side->csv.quote;
	s->dguard = side->csv.delim_guard;
	if (s->dguard && (s->quote || s->dguard == s->delim || s->dguard == '\n'))
		return recon_err_set(err, RECON_ECONFIG, NULL,
				     "%s side: a delimiter guard needs no quoting and a guard "
				     "other than the delimiter",
				     role);
	if (s->quote == s->delim || s->quote == '\n' || s->quote == '\r' || s->delim == '\n' ||
	    s->delim == '\r')
		return recon_err_set(err, RECON_ECONFIG, NULL,
				     "%s side: delimiter 0x%02X and quote 0x%02X cannot be used",
				     role, (unsigned char)s->delim, (unsigned char)s->quote);
	if (side->csv.strip && side->csv.strip[0]) {
		s->has_strip = true;
		for (const char *p = side->csv.strip; *p; p++)
			s->strip[(unsigned char)*p] = 1;
	}
	if (side->key_first_of && !side->csv.header)
		return recon_err_set(
		    err, RECON_ECONFIG, NULL,
		    "%s side: a {\"first_of\": [...]} key names header columns: the "
		    "csv needs a header",
		    role);
	for (int r = 0; r < RECON_COL__COUNT; r++) {
		const char *name = side->cols[r];
		unsigned long pos = 0;

		s->col[r] = CSV_NO_COL;
		if (!name || side->csv.header)
			continue;
		for (const char *p = name; *p; p++) {
			if (*p < '0' || *p > '9' || pos > CSV_POS_MAX) {
				pos = 0;
				break;
			}
			pos = pos * 10 + (unsigned long)(*p - '0');
		}
		if (!pos || pos > CSV_POS_MAX)
			return recon_err_set(err, RECON_ECONFIG, NULL,
					     "%s side: column '%s' (role '%s') is not a position "
					     "1..%d (the csv has no header)",
					     role, name, recon_col_name((enum recon_col)r),
					     CSV_POS_MAX);
		s->col[r] = pos - 1;
		if (pos > s->need)
			s->need = pos;
	}
	if (!is_utf8_name(side->csv.encoding)) {
		s->cd = iconv_open("UTF-8", side->csv.encoding);
		if (s->cd == (iconv_t)-1)
			return recon_err_set(err, RECON_ECONFIG, NULL,
					     "%s side: unknown encoding '%s'", role,
					     side->csv.encoding);
		s->conv = true;
		/* RECON_NO_DBCS=1: iconv for every line (tests run both; a way round) */
		if (!getenv("RECON_NO_DBCS") || strcmp(getenv("RECON_NO_DBCS"), "1"))
			s->dbcs = recon_dbcs_new(side->csv.encoding, s->cd);
	}
	return 0;
}

/*
 * A statement is a regular file or a pipe: a device (/dev/zero) or a folder is
 * refused, since it would be read forever or not at all. A regular file is
 * read blocking again; a pipe stays non-blocking (wait_input).
 */
static int check_kind(struct csv_source *s, struct recon_err *err)
{
	struct stat sb;

	if (fstat(s->fd, &sb) < 0)
		return recon_err_set(err, RECON_EIO, NULL, "cannot open '%s': %s", s->path,
				     strerror(errno));
	if (!S_ISREG(sb.st_mode) && !S_ISFIFO(sb.st_mode))
		return recon_err_set(err, RECON_EINPUT, NULL, "'%s' is %s, not a statement file",
				     s->path,
				     S_ISDIR(sb.st_mode)   ? "a folder"
				     : S_ISCHR(sb.st_mode) ? "a character device"
				     : S_ISBLK(sb.st_mode) ? "a block device"
							   : "a socket");
	s->pipe = S_ISFIFO(sb.st_mode);
	if (!s->pipe && fcntl(s->fd, F_SETFL, 0) < 0)
		return recon_err_set(err, RECON_EIO, NULL, "cannot read '%s': %s", s->path,
				     strerror(errno));
	return 0;
}

/* recon_zip_gz_wait()'s wait: a compressed FIFO's next bytes, as wait_input(). */
static int gz_wait(void *arg, struct recon_err *err)
{
	return wait_input(arg, err);
}

/*
 * A .zip or a .gz is told by its first bytes: read with pread() from a file;
 * from a pipe (standard input) they are read once and handed on to what
 * reads the rest (the gzip stream, or the line buffer), hashed once.
 */
static int detect_packing(struct csv_source *s, struct recon_err *err)
{
	unsigned char head[4];
	ssize_t n = pread(s->fd, head, sizeof(head), 0);
	bool pipe = false;
	int ret;

	if (n < 0 && errno == ESPIPE) {
		pipe = true;
		n = 0;
		/* a FIFO without a writer yet reads as ended: wait (bounded) for one first */
		if (s->pipe && (ret = wait_input(s, err)) < 0)
			return ret;
		while (n < (ssize_t)sizeof(head)) {
			ssize_t r = read(s->fd, head + n, sizeof(head) - (size_t)n);

			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && errno == EAGAIN && s->pipe) {
				/* a FIFO is read without blocking: wait (bounded) for its writer */
				if ((ret = wait_input(s, err)) < 0)
					return ret;
				continue;
			}
			if (r < 0)
				return recon_err_set(err, RECON_EIO, NULL, "cannot read '%s': %s",
						     s->path, strerror(errno));
			if (r == 0)
				break;
			n += r;
		}
	}
	if (n > 0 && recon_zip_magic(head, (size_t)n)) {
		if (pipe)
			return recon_err_set(
			    err, RECON_EINPUT, s->path,
			    "a .zip cannot be read from a pipe (its directory is at "
			    "its end): give its path, or unzip it into the pipe");
		/* hashed as stored, as it streams by (sha_done at the end) */
		return recon_zip_open(&s->zip, s->fd, s->path, s->side->csv.encoding,
				      s->side->csv.zip_entry, s->side->csv.zip_exclude, &s->sha,
				      err);
	}
	if (n > 0 && recon_zip_gz_magic(head, (size_t)n)) {
		/* hashed as stored, as it streams by (sha_done at the end) */
		ret = recon_zip_gz_open(&s->gz, s->fd, s->path, &s->sha, err);
		if (ret == 0 && pipe)
			recon_zip_gz_prefix(s->gz, head, (size_t)n);
		if (ret == 0 && s->pipe)
			recon_zip_gz_wait(s->gz, gz_wait, s);
		return ret;
	}
	if (pipe && n > 0) {
		/* plain text: the bytes read are the start of the first line */
		memcpy(s->buf + s->end, head, (size_t)n);
		s->end += (size_t)n;
		recon_sha256_update(&s->sha, head, (size_t)n);
	}
	/* plain text: hashed through a lane another thread may help (recon_source_csv_lane) */
	s->lane = recon_sha_lane_new(&s->sha);
	s->ring[0] = s->buf;
	s->ring_cap[0] = s->cap;
	s->ring_at = 0;
	return 0;
}

static int csv_open(struct recon_source **out, const struct recon_side *side,
		    const struct recon_window *win, struct recon_err *err)
{
	struct csv_source *s = recon_xcalloc(1, sizeof(*s));
#ifdef HAVE_SPLIT512
	{
		/* RECON_NO_AVX512=1: the SSE2 splitter (tests run both; a way round a bad CPU) */
		const char *no = getenv("RECON_NO_AVX512");
		s->split512 = __builtin_cpu_supports("avx512bw") && !(no && !strcmp(no, "1"));
	}
#endif
	int ret;

	*out = NULL;
	s->base.ops = &recon_source_csv_ops;
	s->side = side;
	s->fd = -1;
	s->cd = (iconv_t)-1;
	atomic_init(&s->pump_stop, false);
	recon_buf_init(&s->ovraw);
	recon_buf_init(&s->conv_out);
	recon_buf_init(&s->fbuf);
	recon_buf_init(&s->rawbuf);
	recon_buf_init(&s->footer);
	recon_buf_init(&s->trailer);
	csv_init(&s->csv, CSV_STRICT);
	csv_set_delim(&s->csv, (unsigned char)(side->csv.delimiter ? side->csv.delimiter : ','));
	csv_set_quote(&s->csv, (unsigned char)side->csv.quote);
	csv_set_space_func(&s->csv, never_space);
	csv_set_term_func(&s->csv, is_newline);
	csv_set_realloc_func(&s->csv, recon_xrealloc);
	csv_set_blk_size(&s->csv, CSV_LIBCSV_BLK);
	s->path = recon_job_expand_path(side->path, win->day);
	s->base.name = s->path;
	prefixes_init(&s->stop, side->csv.stop_prefixes, s->pfx_first);
	prefixes_init(&s->comment, side->csv.comment_prefixes, s->pfx_first);

	ret = layout_init(s, err);
	if (ret < 0)
		goto out;
	s->cap = 2 * CSV_BLOCK;
	s->buf = recon_xmalloc(s->cap);
	/* non-blocking: opening a FIFO without a writer must not block (see wait_input) */
	s->fd = open(s->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (s->fd < 0) {
		int e = errno;

		/*
		 * A window shorter than a day is a hot one: a provider's daily statement
		 * does not exist yet for today, and never will for a 5-minute window.
		 */
		if ((e == ENOENT || e == ENOTDIR) && win->end > win->start &&
		    win->end - win->start < 22 * RECON_MS_PER_HOUR)
			ret =
			    recon_err_set(err, RECON_EUNAVAIL, NULL,
					  "cannot open '%s': %s: hot mode reads its window every "
					  "few minutes, so its %s side needs a database (or a csv "
					  "file that grows through the day at that path); a daily "
					  "statement is for t1 runs",
					  s->path, strerror(e), side->role);
		else
			ret = recon_err_set(
			    err, e == ENOENT || e == ENOTDIR ? RECON_EUNAVAIL : RECON_EIO, NULL,
			    "cannot open '%s': %s", s->path, strerror(e));
		goto out;
	}
	if ((ret = check_kind(s, err)) < 0)
		goto out;
	recon_sha256_init(&s->sha);
	if ((ret = detect_packing(s, err)) < 0)
		goto out;
	s->totals = recon_totals_new(side);
	if (side->csv.header) {
		ret = read_record(s, err);
		if (ret < 0)
			goto out;
		if (ret == 0) {
			/* empty: no header, no rows; csv_next() judges it (totals, reject_empty) */
			s->no_header = true;
		} else {
			s->seen_record = true;
			ret = process_header(s, err);
			if (ret < 0)
				goto out;
		}
	}
	for (int r = 0; r < RECON_COL__COUNT; r++)
		if (s->col[r] != CSV_NO_COL)
			s->mapped[s->nmapped++] = (uint8_t)r;
	ret = 0;
	*out = &s->base;
	s = NULL;
out:
	csv_close(s ? &s->base : NULL);
	return ret;
}

static void csv_close(struct recon_source *src)
{
	struct csv_source *s = (struct csv_source *)src;

	if (!s)
		return;
	/* the pump's thread reads fd and the zip or gz: it ends first */
	atomic_store(&s->pump_stop, true);
	recon_pump_free(s->pump);
	if (s->fd >= 0)
		close(s->fd);
	/* nothing queued may point into the buffers once they are gone */
	if (s->lane)
		recon_sha_lane_flush(s->lane);
	recon_sha_lane_free(s->lane);
	if (s->conv)
		iconv_close(s->cd);
	recon_dbcs_free(s->dbcs);
	csv_free(&s->csv);
	if (s->lane) {
		for (unsigned i = 0; i < CSV_RING; i++)
			free(s->ring[i]);
	} else {
		free(s->buf);
	}
	free(s->f);
	free(s->stop.v);
	free(s->comment.v);
	recon_buf_release(&s->ovraw);
	recon_buf_release(&s->conv_out);
	recon_buf_release(&s->fbuf);
	recon_buf_release(&s->rawbuf);
	recon_buf_release(&s->footer);
	recon_buf_release(&s->trailer);
	free(s->footer_lines);
	recon_zip_close(s->zip);
	recon_zip_gz_close(s->gz);
	recon_totals_free(s->totals);
	free(s->cells);
	free(s->path);
	free(s);
}

const struct recon_source_ops recon_source_csv_ops = {
    .kind = "csv",
    .open = csv_open,
    .next = csv_next,
    .lookup = NULL,
    .close = csv_close,
};

const char *recon_source_csv_trailer(const struct recon_source *src, size_t *len,
				     uint64_t *first_line)
{
	const struct csv_source *s = (const struct csv_source *)src;

	*len = 0;
	if (first_line)
		*first_line = 0;
	if (!src || src->ops != &recon_source_csv_ops || !s->has_trailer)
		return NULL;
	*len = s->trailer.len;
	if (first_line)
		*first_line = s->trailer_line;
	return s->trailer.s;
}

const char *recon_source_csv_footer(const struct recon_source *src, size_t *len)
{
	const struct csv_source *s = (const struct csv_source *)src;

	*len = 0;
	if (!src || src->ops != &recon_source_csv_ops || !s->footer.len)
		return NULL;
	*len = s->footer.len;
	return s->footer.s;
}

struct recon_sha_lane *recon_source_csv_lane(const struct recon_source *src)
{
	const struct csv_source *s = (const struct csv_source *)src;

	return src && src->ops == &recon_source_csv_ops ? s->lane : NULL;
}

int recon_source_csv_sha256(const struct recon_source *src, char hex[65])
{
	const struct csv_source *s = (const struct csv_source *)src;
	struct recon_sha256 copy;

	if (!src || src->ops != &recon_source_csv_ops || !s->sha_done)
		return -1;
	copy = s->sha; /* final() consumes the state; the source keeps its own */
	recon_sha256_final_hex(&copy, hex);
	return 0;
}
