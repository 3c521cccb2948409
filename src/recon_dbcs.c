#include "recon_dbcs.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "recon_mem.h"
#include "recon_report.h"

#define PAIRS	  (128u * 256u) /* a first byte from 0x80 up, then any byte */
#define PAIR_NONE 0xFFu		/* not converted here: the line goes to iconv */
#define PAIR_MAX  4		/* a pair's UTF-8 kept: one character of CJK takes 3 */

struct recon_dbcs {
	iconv_t cd;
	uint8_t len[PAIRS]; /* 0: not asked yet, PAIR_NONE, else its UTF-8's bytes */
	char utf8[PAIRS][PAIR_MAX];
};

/* Stateless, double-byte at most but for GB18030's four-byte sequences (which go to iconv). */
static const char *const encodings[] = {
    "GBK",   "CP936",	   "GB2312", "EUC-CN", "GB18030", "BIG5", "BIG-5",
    "CP950", "BIG5-HKSCS", "EUC-KR", "CP949",  "UHC",	  NULL,
};

/* Whether p[0, n) is UTF-8 without NUL, its characters whole (n is small). */
static bool utf8_whole(const unsigned char *p, size_t n)
{
	for (size_t i = 0, l; i < n; i += l)
		if (!p[i] || !(l = recon_report_utf8_len(p + i, n - i)))
			return false;
	return true;
}

struct recon_dbcs *recon_dbcs_new(const char *encoding, iconv_t cd)
{
	char ascii[128], out[256], *in = ascii, *o = out;
	size_t il = sizeof(ascii), ol = sizeof(out);
	struct recon_dbcs *d;
	size_t i;

	for (i = 0; encodings[i] && (!encoding || strcasecmp(encoding, encodings[i])); i++)
		;
	if (!encodings[i] || cd == (iconv_t)-1)
		return NULL;
	/* every ASCII byte (NUL too) as itself */
	for (i = 0; i < sizeof(ascii); i++)
		ascii[i] = (char)i;
	iconv(cd, NULL, NULL, NULL, NULL);
	if (iconv(cd, &in, &il, &o, &ol) == (size_t)-1 || il ||
	    o - out != (ptrdiff_t)sizeof(ascii) || memcmp(out, ascii, sizeof(ascii)))
		return NULL;
	d = recon_xcalloc(1, sizeof(*d));
	d->cd = cd;
	return d;
}

void recon_dbcs_free(struct recon_dbcs *d)
{
	free(d);
}

/* Asks iconv for pair k's UTF-8 and keeps it, or PAIR_NONE. */
static uint8_t pair_learn(struct recon_dbcs *d, unsigned k)
{
	char two[2] = {(char)(0x80u + (k >> 8)), (char)(k & 0xFFu)}, out[16];
	char *in = two, *o = out;
	size_t il = 2, ol = sizeof(out), n;

	iconv(d->cd, NULL, NULL, NULL, NULL);
	if (iconv(d->cd, &in, &il, &o, &ol) == (size_t)-1 || il) {
		d->len[k] = PAIR_NONE;
	} else {
		/* flushes a stateful tail, if any: there must be none */
		n = (size_t)(o - out);
		if (iconv(d->cd, NULL, NULL, &o, &ol) == (size_t)-1 || (size_t)(o - out) != n ||
		    !n || n > PAIR_MAX || !utf8_whole((const unsigned char *)out, n)) {
			d->len[k] = PAIR_NONE;
		} else {
			memcpy(d->utf8[k], out, n);
			d->len[k] = (uint8_t)n;
		}
	}
	iconv(d->cd, NULL, NULL, NULL, NULL);
	return d->len[k];
}

#define ASCII_HI 0x8080808080808080ULL
#define ASCII_LO 0x0101010101010101ULL

bool recon_dbcs_convert(struct recon_dbcs *d, const char *in, size_t n, char *out, size_t *outlen,
			bool *nul)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t i = 0, o = 0;
	bool zero = false;

	while (i < n) {
		uint64_t w;

		/* ASCII without NUL, 8 bytes at a time */
		if (i + 8 <= n) {
			memcpy(&w, p + i, 8);
			if (!((w | ((w - ASCII_LO) & ~w)) & ASCII_HI)) {
				memcpy(out + o, &w, 8);
				i += 8;
				o += 8;
				continue;
			}
		}
		if (p[i] < 0x80) {
			zero |= p[i] == 0;
			out[o++] = (char)p[i++];
			continue;
		}
		if (i + 1 >= n)
			return false;
		{
			const unsigned k = (unsigned)(p[i] - 0x80u) << 8 | p[i + 1];
			uint8_t len = d->len[k];

			if (!len)
				len = pair_learn(d, k);
			if (len == PAIR_NONE)
				return false;
			/* a pair's 2 bytes give at most 4: out's 2 * n is room enough */
			memcpy(out + o, d->utf8[k], PAIR_MAX);
			o += len;
			i += 2;
		}
	}
	*outlen = o;
	*nul = zero;
	return true;
}
