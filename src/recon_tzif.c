/*
 * recon_tzif: the time zone file reader (recon_tzif.h): a zone name to a
 * file under the zone folder, the file's TZif blocks (the 64-bit one for v2+)
 * and its footer's POSIX TZ rule, each count and value checked before use.
 */
#include "recon_tzif.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "recon_mem.h"

/* Zone names are relative paths under the zone directory. */
#define TZ_NAME_MAX 255
/* Real tz files are a few KiB; anything larger is refused unread. */
#define TZIF_MAX_SIZE (1024 * 1024)
#define TZIF_HDR_SIZE 44
/* Default DST rule when a TZ string names a DST zone but gives no rule (as tzcode). */
#define TZ_DEFAULT_RULE ",M3.2.0,M11.1.0"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* A name quoted in messages: escaped, cut to RECON_QUOTE_MAX bytes (recon_err_quote). */
static const char *quote(char dst[RECON_QUOTE_BUF], const char *s)
{
	return recon_err_quote(dst, s, strlen(s), RECON_QUOTE_ASCII);
}

/* ---- POSIX TZ rules (TZif footers) ---- */

/* Up to `maxdig` digits as a number in [0, max]; NULL on failure. */
static const char *rule_num(const char *p, const char *end, int maxdig, int max, int *out)
{
	int v = 0, n = 0;

	while (p < end && is_digit(*p) && n < maxdig) {
		v = v * 10 + (*p - '0');
		p++;
		n++;
	}
	if (n == 0 || v > max || (p < end && is_digit(*p)))
		return NULL;
	*out = v;
	return p;
}

/*
 * [+-]hh[:mm[:ss]], hh at most max_hours. Stores signed seconds as written
 * (POSIX offsets are west-positive; the caller negates). NULL on failure.
 */
static const char *rule_hms(const char *p, const char *end, int max_hours, int32_t *out)
{
	int sign = 1, hh, mm = 0, ss = 0;

	if (p < end && (*p == '+' || *p == '-')) {
		sign = *p == '-' ? -1 : 1;
		p++;
	}
	p = rule_num(p, end, 3, max_hours, &hh);
	if (!p)
		return NULL;
	if (p < end && *p == ':') {
		p = rule_num(p + 1, end, 2, 59, &mm);
		if (!p)
			return NULL;
		if (p < end && *p == ':') {
			p = rule_num(p + 1, end, 2, 59, &ss);
			if (!p)
				return NULL;
		}
	}
	*out = sign * (hh * 3600 + mm * 60 + ss);
	return p;
}

/* A zone abbreviation: alphabetic, or <...> with alphanumerics and signs. */
static const char *rule_name(const char *p, const char *end)
{
	const char *start;

	if (p < end && *p == '<') {
		start = ++p;
		while (p < end && (is_digit(*p) || (*p >= 'A' && *p <= 'Z') ||
				   (*p >= 'a' && *p <= 'z') || *p == '+' || *p == '-'))
			p++;
		if (p == start || p >= end || *p != '>')
			return NULL;
		return p + 1;
	}
	start = p;
	while (p < end && ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
		p++;
	return p == start ? NULL : p;
}

static const char *rule_date(const char *p, const char *end, struct recon_tzif_rule_date *rd)
{
	int32_t t = 7200;

	memset(rd, 0, sizeof(*rd));
	if (p < end && *p == 'J') {
		rd->kind = 'J';
		p = rule_num(p + 1, end, 3, 365, &rd->n);
		if (!p || rd->n < 1)
			return NULL;
	} else if (p < end && *p == 'M') {
		rd->kind = 'M';
		p = rule_num(p + 1, end, 2, 12, &rd->mon);
		if (!p || rd->mon < 1 || p >= end || *p != '.')
			return NULL;
		p = rule_num(p + 1, end, 1, 5, &rd->week);
		if (!p || rd->week < 1 || p >= end || *p != '.')
			return NULL;
		p = rule_num(p + 1, end, 1, 6, &rd->wday);
		if (!p)
			return NULL;
	} else {
		rd->kind = 'D';
		p = rule_num(p, end, 3, 365, &rd->n);
		if (!p)
			return NULL;
	}
	if (p < end && *p == '/') {
		/* RFC 8536 version 3 allows -167..167 hours. */
		p = rule_hms(p + 1, end, 167, &t);
		if (!p)
			return NULL;
	}
	rd->time = t;
	return p;
}

/* Parses a POSIX TZ string s[0..len). Returns false if it is malformed. */
static bool rule_parse(const char *s, size_t len, struct recon_tzif_rule *r)
{
	const char *p = s, *end = s + len;
	int32_t off;

	memset(r, 0, sizeof(*r));
	p = rule_name(p, end);
	if (!p)
		return false;
	p = rule_hms(p, end, 24, &off);
	if (!p)
		return false;
	r->std_off = -off;
	if (p == end)
		return true;
	p = rule_name(p, end);
	if (!p)
		return false;
	r->has_dst = true;
	r->dst_off = r->std_off + 3600;
	if (p < end && *p != ',') {
		p = rule_hms(p, end, 24, &off);
		if (!p)
			return false;
		r->dst_off = -off;
	}
	if (p == end) {
		p = TZ_DEFAULT_RULE;
		end = p + strlen(p);
	}
	if (*p != ',')
		return false;
	p = rule_date(p + 1, end, &r->start);
	if (!p || p >= end || *p != ',')
		return false;
	p = rule_date(p + 1, end, &r->end);
	return p == end;
}

/* ---- TZif files ---- */

/* [A-Za-z0-9_+-] components separated by single '/'; so no "..", no leading '/'. */
static bool tz_name_ok(const char *name)
{
	size_t i, comp = 0;

	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= TZ_NAME_MAX)
			return false;
		if (c == '/') {
			if (comp == 0)
				return false;
			comp = 0;
			continue;
		}
		if (!(is_digit(c) || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' ||
		      c == '+' || c == '-'))
			return false;
		comp++;
	}
	return comp > 0;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Two's complement without implementation-defined conversions. */
static int64_t be32s(const unsigned char *p)
{
	uint32_t u = be32(p);

	return u <= INT32_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

static int64_t be64s(const unsigned char *p)
{
	uint64_t u = (uint64_t)be32(p) << 32 | be32(p + 4);

	return u <= INT64_MAX ? (int64_t)u : -(int64_t)(~u) - 1;
}

struct tzif_hdr {
	int version; /* 1, 2, 3, 4 */
	size_t isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt;
};

/* Reads the header at buf[0..avail); returns NULL or what is wrong. */
static const char *tzif_header(const unsigned char *buf, size_t avail, struct tzif_hdr *h)
{
	size_t *cnt[6];
	int i;

	if (avail < TZIF_HDR_SIZE || memcmp(buf, "TZif", 4) != 0)
		return "";
	if (buf[4] == 0)
		h->version = 1;
	else if (buf[4] >= '2' && buf[4] <= '4')
		h->version = buf[4] - '0';
	else
		return "unsupported version";
	cnt[0] = &h->isutcnt;
	cnt[1] = &h->isstdcnt;
	cnt[2] = &h->leapcnt;
	cnt[3] = &h->timecnt;
	cnt[4] = &h->typecnt;
	cnt[5] = &h->charcnt;
	for (i = 0; i < 6; i++) {
		uint32_t v = be32(buf + 20 + 4 * i);

		/* Keeps the size arithmetic below far from overflow. */
		if (v > TZIF_MAX_SIZE)
			return "count out of range";
		*cnt[i] = v;
	}
	if (h->typecnt == 0 || h->typecnt > 256)
		return "bad time type count";
	if ((h->isutcnt != 0 && h->isutcnt != h->typecnt) ||
	    (h->isstdcnt != 0 && h->isstdcnt != h->typecnt))
		return "bad indicator count";
	return NULL;
}

/* Size of the data block after a header; tsize is 4 (v1) or 8 (v2+). */
static size_t tzif_block_size(const struct tzif_hdr *h, size_t tsize)
{
	return h->timecnt * tsize + h->timecnt + h->typecnt * 6 + h->charcnt +
	       h->leapcnt * (tsize + 4) + h->isstdcnt + h->isutcnt;
}

/*
 * Fills tz (zeroed) from the TZif image buf[0..size); on failure its arrays may
 * hold something to release. Returns NULL or what is wrong
 * ("" for "not TZif at all").
 */
static const char *tzif_parse(struct recon_tzif *tz, const unsigned char *buf, size_t size)
{
	struct tzif_hdr h;
	const unsigned char *data, *types, *ttinfo;
	size_t pos, tsize = 4, i, bsize;
	const char *why;

	why = tzif_header(buf, size, &h);
	if (why)
		return why;
	pos = TZIF_HDR_SIZE;
	bsize = tzif_block_size(&h, 4);
	if (bsize > size - pos)
		return "data truncated";
	if (h.version >= 2) {
		/* Skip the 32-bit block; the 64-bit one follows its own header. */
		pos += bsize;
		why = tzif_header(buf + pos, size - pos, &h);
		if (why)
			return *why ? why : "second header missing";
		pos += TZIF_HDR_SIZE;
		tsize = 8;
		bsize = tzif_block_size(&h, 8);
		if (bsize > size - pos)
			return "data truncated";
	}
	data = buf + pos;
	types = data + h.timecnt * tsize;
	ttinfo = types + h.timecnt;

	for (i = 0; i < h.typecnt; i++) {
		int64_t utoff = be32s(ttinfo + 6 * i);

		if (utoff <= -RECON_TZIF_OFFSET_LIMIT || utoff >= RECON_TZIF_OFFSET_LIMIT)
			return "utc offset out of range";
		if (ttinfo[6 * i + 4] > 1)
			return "bad dst flag";
	}
	tz->first_off = (int32_t)be32s(ttinfo);
	tz->ntrans = h.timecnt;
	tz->trans = recon_xcalloc(h.timecnt, sizeof(*tz->trans));
	tz->trans_off = recon_xcalloc(h.timecnt, sizeof(*tz->trans_off));
	for (i = 0; i < h.timecnt; i++) {
		int64_t t = tsize == 8 ? be64s(data + 8 * i) : be32s(data + 4 * i);

		if (i > 0 && t <= tz->trans[i - 1])
			return "transitions out of order";
		if (types[i] >= h.typecnt)
			return "bad time type index";
		tz->trans[i] = t;
		tz->trans_off[i] = (int32_t)be32s(ttinfo + 6 * types[i]);
	}
	pos += bsize;

	/* Footer (v2+): "\n<POSIX TZ string>\n"; an empty string means no rule. */
	if (h.version >= 2 && pos < size) {
		const unsigned char *nl;
		size_t flen;

		if (buf[pos] != '\n')
			return "bad footer";
		pos++;
		nl = memchr(buf + pos, '\n', size - pos);
		if (!nl)
			return "footer truncated";
		flen = (size_t)(nl - (buf + pos));
		if (flen > 0) {
			if (!rule_parse((const char *)buf + pos, flen, &tz->rule))
				return "bad footer";
			tz->has_rule = true;
		}
	}
	return NULL;
}

/*
 * Reads the regular file at path into *buf (caller frees). 0, RECON_ENOTFOUND
 * when there is no such zone, or RECON_ECONFIG with err set.
 */
static int read_zone_file(const char *path, const char *name, unsigned char **buf, size_t *size,
			  struct recon_err *err)
{
	char q[RECON_QUOTE_BUF];
	struct stat st;
	unsigned char *data = NULL;
	size_t n = 0;
	int fd, ret;

	*buf = NULL;
	*size = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == ENAMETOOLONG || errno == ELOOP)
			return RECON_ENOTFOUND;
		return recon_err_set(err, RECON_ECONFIG, NULL,
				     "cannot open time zone file '%s': %s", path, strerror(errno));
	}
	if (fstat(fd, &st) < 0) {
		ret = recon_err_set(err, RECON_ECONFIG, NULL, "cannot stat time zone file '%s': %s",
				    path, strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		/* "America" is a directory, not a zone. */
		ret = recon_err_set(err, RECON_ECONFIG, NULL, "unknown time zone '%s'",
				    quote(q, name));
		goto out;
	}
	if (st.st_size > TZIF_MAX_SIZE) {
		ret = recon_err_set(err, RECON_ECONFIG, NULL,
				    "time zone file '%s' is not a TZif file: larger than %d bytes",
				    path, TZIF_MAX_SIZE);
		goto out;
	}
	/* Reads at most what fstat promised; a file growing meanwhile is cut. */
	data = recon_xmalloc((size_t)st.st_size);
	while (n < (size_t)st.st_size) {
		ssize_t r = read(fd, data + n, (size_t)st.st_size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = recon_err_set(err, RECON_ECONFIG, NULL,
					    "cannot read time zone file '%s': %s", path,
					    strerror(errno));
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*buf = data;
	*size = n;
	data = NULL;
	ret = 0;
out:
	free(data);
	close(fd);
	return ret;
}

void recon_tzif_release(struct recon_tzif *z)
{
	if (!z)
		return;
	free(z->trans);
	free(z->trans_off);
	memset(z, 0, sizeof(*z));
}

int recon_tzif_load(struct recon_tzif *z, const char *name, struct recon_err *err)
{
	char q[RECON_QUOTE_BUF];
	unsigned char *buf = NULL;
	char *path = NULL;
	const char *dir, *why;
	size_t size, plen;
	int ret;

	if (!tz_name_ok(name))
		return recon_err_set(err, RECON_ECONFIG, NULL, "invalid time zone name '%s'",
				     quote(q, name));
	dir = getenv("TZDIR");
	if (!dir || !*dir)
		dir = "/usr/share/zoneinfo";
	plen = recon_st_add(recon_st_add(strlen(dir), strlen(name)), 2);
	path = recon_xmalloc(plen);
	snprintf(path, plen, "%s/%s", dir, name);

	ret = read_zone_file(path, name, &buf, &size, err);
	if (ret == RECON_ENOTFOUND) {
		ret = recon_err_set(err, RECON_ECONFIG, NULL, "unknown time zone '%s'",
				    quote(q, name));
		goto out;
	}
	if (ret < 0)
		goto out;
	why = tzif_parse(z, buf, size);
	if (why) {
		ret = recon_err_set(err, RECON_ECONFIG, NULL,
				    "time zone file '%s' is not a TZif file%s%s", path,
				    *why ? ": " : "", why);
		recon_tzif_release(z);
		goto out;
	}
	ret = 0;
out:
	free(buf);
	free(path);
	return ret;
}
