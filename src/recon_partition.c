#include "recon_partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_buf.h"
#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_source.h"

/* ---- MD5 (RFC 1321): only the first word of the digest is kept ---------- */

static uint32_t rol(uint32_t x, unsigned c)
{
	return (x << c) | (x >> (32 - c));
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void md5_block(uint32_t h[4], const unsigned char *blk)
{
	static const uint32_t k[64] = {
	    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
	    0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
	    0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
	    0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
	    0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
	    0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
	    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
	    0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
	    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
	    0xeb86d391};
	static const unsigned char r[64] = {
	    7,	12, 17, 22, 7,	12, 17, 22, 7,	12, 17, 22, 7,	12, 17, 22, 5,	9,  14, 20, 5,	9,
	    14, 20, 5,	9,  14, 20, 5,	9,  14, 20, 4,	11, 16, 23, 4,	11, 16, 23, 4,	11, 16, 23,
	    4,	11, 16, 23, 6,	10, 15, 21, 6,	10, 15, 21, 6,	10, 15, 21, 6,	10, 15, 21};
	uint32_t w[16], a = h[0], b = h[1], c = h[2], d = h[3];

	for (int i = 0; i < 16; i++)
		w[i] = le32(blk + 4 * i);
	for (unsigned i = 0; i < 64; i++) {
		uint32_t f, t;
		unsigned g;
		if (i < 16) {
			f = (b & c) | (~b & d);
			g = i;
		} else if (i < 32) {
			f = (d & b) | (~d & c);
			g = (5 * i + 1) % 16;
		} else if (i < 48) {
			f = b ^ c ^ d;
			g = (3 * i + 5) % 16;
		} else {
			f = c ^ (b | ~d);
			g = (7 * i) % 16;
		}
		t = d;
		d = c;
		c = b;
		b = b + rol(a + f + k[i] + w[g], r[i]);
		a = t;
	}
	h[0] += a;
	h[1] += b;
	h[2] += c;
	h[3] += d;
}

uint32_t recon_partition_hash(const char *key, size_t len)
{
	uint32_t h[4] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476};
	const unsigned char *p = (const unsigned char *)key;
	unsigned char tail[128];
	uint64_t bits = (uint64_t)len * 8;
	size_t rest, pad;

	for (; len >= 64; p += 64, len -= 64)
		md5_block(h, p);
	rest = len;
	memcpy(tail, p, rest);
	tail[rest] = 0x80;
	pad = rest + 1 + 8 <= 64 ? 64 : 128;
	memset(tail + rest + 1, 0, pad - rest - 1);
	for (int i = 0; i < 8; i++)
		tail[pad - 8 + i] = (unsigned char)(bits >> (8 * i));
	md5_block(h, tail);
	if (pad == 128)
		md5_block(h, tail + 64);
	/* the digest's first four bytes (h[0], little-endian) read big-endian:
	   the number the first 8 hex digits of md5() spell */
	return (h[0] & 0xffu) << 24 | (h[0] & 0xff00u) << 8 | (h[0] >> 8 & 0xff00u) | h[0] >> 24;
}

bool recon_partition_owns(const struct recon_partition *p, const char *key, size_t len)
{
	return p->count <= 1 || recon_partition_hash(key, len) % p->count == p->index;
}

/* A decimal number of at most 4 digits (partition numbers stay small). */
static bool small_number(const char *s, size_t n, uint32_t *out)
{
	uint32_t v = 0;

	if (!n || n > 4)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	*out = v;
	return true;
}

int recon_partition_parse(const char *text, int64_t job_count, struct recon_partition *out,
			  struct recon_err *err)
{
	const char *slash = strchr(text, '/');
	uint32_t index, count;

	if (!small_number(text, slash ? (size_t)(slash - text) : strlen(text), &index) ||
	    (slash && !small_number(slash + 1, strlen(slash + 1), &count)))
		return recon_err_set(err, RECON_EUSAGE, "--partition",
				     "expected I/N (partition I of N, 0 <= I < N), not '%s'", text);
	if (!slash) {
		if (!job_count)
			return recon_err_set(err, RECON_EUSAGE, "--partition",
					     "'%s' needs the number of partitions: I/N", text);
		count = (uint32_t)job_count;
	}
	if (count < 1 || count > RECON_PARTITION_MAX || index >= count)
		return recon_err_set(err, RECON_EUSAGE, "--partition",
				     "partition %u of %u does not exist (0 <= I < N <= %d)", index,
				     count, RECON_PARTITION_MAX);
	/* another N is another set of stores: its watermarks and ledgers start empty */
	if (job_count && count != job_count)
		return recon_err_set(
		    err, RECON_EUSAGE, "--partition",
		    "the job splits into %lld partitions (partition.count), not %u",
		    (long long)job_count, count);
	out->index = index;
	out->count = count;
	return 0;
}

char *recon_partition_path(const char *path, const struct recon_partition *p)
{
	const char *base = strrchr(path, '/'), *dot;
	struct recon_buf b;

	if (!p->count)
		return recon_xstrdup(path);
	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		dot = path + strlen(path);
	recon_buf_init(&b);
	recon_buf_add(&b, path, (size_t)(dot - path));
	recon_buf_addf(&b, ".p%u-of-%u%s", p->index, p->count, dot);
	return recon_buf_detach(&b);
}

const char *recon_partition_labels(const struct recon_partition *p, char *buf, size_t size)
{
	if (p->count)
		snprintf(buf, size, "partition=\"%u\",partitions=\"%u\"", p->index, p->count);
	else if (size)
		buf[0] = '\0';
	return buf;
}

void recon_partition_apply(struct recon_job *job, const struct recon_partition *p)
{
	char *s;

	job->upstream.part = *p;
	job->local.part = *p;
	if (!p->count)
		return;
	s = recon_partition_path(job->state_path, p);
	free(job->state_path);
	job->state_path = s;
	if (job->heartbeat_path) {
		s = recon_partition_path(job->heartbeat_path, p);
		free(job->heartbeat_path);
		job->heartbeat_path = s;
	}
}

int recon_partition_select(struct recon_job *job, const char *text, struct recon_err *err)
{
	struct recon_partition p = {0, 0};
	int rc;

	if (!text && job->partition_count)
		return recon_err_set(
		    err, RECON_EUSAGE, "--partition",
		    "job '%s' splits into %lld partitions, each with its own state "
		    "store: name one with --partition I/%lld",
		    job->name, (long long)job->partition_count, (long long)job->partition_count);
	if (text && (rc = recon_partition_parse(text, job->partition_count, &p, err)) < 0)
		return rc;
	recon_partition_apply(job, &p);
	return 0;
}

bool recon_partition_row_ours(const struct recon_side *side, const struct recon_raw_row *raw,
			      int rc, const struct recon_row *row)
{
	const struct recon_partition *p = &side->part;
	char *text;
	size_t len = 0, o = 0;
	bool ours;

	if (p->count <= 1)
		return true;
	if (rc == RECON_NORM_SKIPPED)
		return p->index == 0; /* keyless lines: counted once, by partition 0 */
	if (row->key)
		return recon_partition_owns(p, row->key, row->key_len);
	/* a reject whose key did not normalize: its key text as read, or every partition */
	for (unsigned i = 0; i < side->nkey; i++) {
		enum recon_col c = (enum recon_col)(RECON_COL_KEY0 + i);
		if (!raw->val[c] || !raw->len[c])
			return true;
		len += raw->len[c] + (i ? 1 : 0);
	}
	text = recon_xmalloc(len + 1);
	for (unsigned i = 0; i < side->nkey; i++) {
		enum recon_col c = (enum recon_col)(RECON_COL_KEY0 + i);
		if (i)
			text[o++] = RECON_KEY_SEP;
		memcpy(text + o, raw->val[c], raw->len[c]);
		o += raw->len[c];
	}
	ours = recon_partition_owns(p, text, o);
	free(text);
	return ours;
}

/* recon_normalize_row()'s trim: ASCII blanks and the side's guard characters. */
static void trim(const struct recon_side *side, const char **s, size_t *len)
{
	const char *p = *s, *guard = side->csv.strip ? side->csv.strip : "";
	size_t n = *len, g = strlen(guard);

	while (n &&
	       (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n' || (g && memchr(guard, *p, g))))
		p++, n--;
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' || p[n - 1] == '\n' ||
		     (g && memchr(guard, p[n - 1], g))))
		n--;
	*s = p;
	*len = n;
}

bool recon_partition_row_skip(const struct recon_side *side, const struct recon_raw_row *raw)
{
	const struct recon_partition *p = &side->part;
	char key[RECON_KEY_PARTS_MAX * 1025];
	size_t o = 0;

	if (p->count <= 1 || !recon_source_has(side, RECON_SOURCE_FILE) || raw->reject)
		return false;
	if (side->cols[RECON_COL_ENTRY_TYPE]) {
		/* keyless lines are partition 0's; an unknown type is a reject: normalize */
		const char *s = raw->val[RECON_COL_ENTRY_TYPE];
		size_t len = raw->len[RECON_COL_ENTRY_TYPE];
		int v;
		if (!s)
			return false;
		trim(side, &s, &len);
		v = len ? recon_map_get(&side->entry_types, s, len) : -1;
		if (v < 0 || v == RECON_ENTRY_KEYLESS || v == RECON_ENTRY_IGNORE)
			return false;
	}
	/* the key as join_key() builds it; any defect: normalize */
	for (unsigned i = 0; i < side->nkey; i++) {
		const char *s = raw->val[RECON_COL_KEY0 + i];
		size_t len = raw->len[RECON_COL_KEY0 + i];
		if (!s)
			return false;
		trim(side, &s, &len);
		if (!len || len > 1024)
			return false;
		for (size_t j = 0; j < len; j++)
			if ((unsigned char)s[j] < 0x20 || s[j] == 0x7f)
				return false;
		if (i)
			key[o++] = RECON_KEY_SEP;
		memcpy(key + o, s, len);
		o += len;
	}
	return !recon_partition_owns(p, key, o);
}

/* The key text as SQL: one column's text, or the parts joined with RECON_KEY_SEP. */
static void sql_key(const struct recon_side *side, enum recon_partition_dialect d,
		    struct recon_buf *sql)
{
	const bool pg = d == RECON_PARTITION_SQL_POSTGRES;

	recon_buf_adds(sql, pg ? "convert_to(" : "CONVERT(CONCAT(");
	for (unsigned i = 0; i < side->nkey; i++) {
		const char *col = side->cols[RECON_COL_KEY0 + i];
		if (i)
			recon_buf_adds(sql, pg ? " || chr(31) || " : ", CHAR(31 USING utf8mb4), ");
		if (pg)
			recon_buf_addf(sql, "\"%s\"::text", col);
		else
			recon_buf_addf(sql, "CAST(`%s` AS CHAR)", col);
	}
	recon_buf_adds(sql, pg ? ", 'UTF8')" : ") USING utf8mb4)");
}

void recon_partition_sql(const struct recon_side *side, enum recon_partition_dialect d,
			 struct recon_buf *sql)
{
	const struct recon_partition *p = &side->part;
	const bool pg = d == RECON_PARTITION_SQL_POSTGRES;

	/* a {"first_of": [...]} key is an expression: its rows are filtered in C only */
	if (p->count <= 1 || side->key_first_of)
		return;
	/* hash % N = I, with the hash the first 8 hex digits of md5() as a number */
	if (pg) {
		recon_buf_adds(sql, " AND ((('x' || left(md5(");
		sql_key(side, d, sql);
		recon_buf_addf(sql, "), 8))::bit(32)::bigint %% %u = %u)", p->count, p->index);
	} else {
		recon_buf_adds(sql, " AND ((CAST(CONV(LEFT(MD5(");
		sql_key(side, d, sql);
		recon_buf_addf(sql, "), 8), 16, 10) AS UNSIGNED) %% %u = %u)", p->count, p->index);
	}
	/* keys C decides: NULL or empty parts, blanks that normalizing trims */
	for (unsigned i = 0; i < side->nkey; i++) {
		const char *col = side->cols[RECON_COL_KEY0 + i];
		static const char set_pg[] = "('', ' ', chr(9), chr(10), chr(13))";
		static const char set_my[] = "('', ' ', CHAR(9), CHAR(10), CHAR(13))";
		if (pg)
			recon_buf_addf(sql,
				       " OR \"%s\" IS NULL OR left(\"%s\"::text, 1) IN %s OR "
				       "right(\"%s\"::text, 1) IN %s",
				       col, col, set_pg, col, set_pg);
		else
			recon_buf_addf(sql,
				       " OR `%s` IS NULL OR LEFT(CAST(`%s` AS CHAR), 1) IN %s OR "
				       "RIGHT(CAST(`%s` AS CHAR), 1) IN %s",
				       col, col, set_my, col, set_my);
	}
	recon_buf_addc(sql, ')');
}
