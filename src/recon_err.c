#include "recon_err.h"

#include <stdio.h>
#include <string.h>

void recon_err_init(struct recon_err *err)
{
	err->code = 0;
	err->where[0] = '\0';
	err->msg[0] = '\0';
}

int recon_err_setv(struct recon_err *err, int code, const char *where, const char *fmt, va_list ap)
{
	if (!err || err->code)
		return code;
	err->code = code;
	snprintf(err->where, sizeof(err->where), "%s", where ? where : "");
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return code;
}

int recon_err_set(struct recon_err *err, int code, const char *where, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	recon_err_setv(err, code, where, fmt, ap);
	va_end(ap);
	return code;
}

const char *recon_err_str(const struct recon_err *err, char *buf, unsigned long size)
{
	if (err->where[0])
		snprintf(buf, size, "%s: %s", err->where, err->msg);
	else
		snprintf(buf, size, "%s", err->msg);
	return buf;
}

int recon_err_exit_code(int code)
{
	switch (code) {
	case 0:
		return 0;
	case RECON_EINPUT:
	case RECON_EVALUE:
		return 65;
	case RECON_EUNAVAIL:
		return 69;
	case RECON_ELOCKED:
		return 75;
	case RECON_EPERM:
		return 77;
	case RECON_EWRITE:
		return 73;
	case RECON_ECONFIG:
		return 78;
	case RECON_EUSAGE:
		return 64;
	default:
		return 1;
	}
}

const char *recon_err_quote(char *dst, const char *s, unsigned long len, unsigned flags)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	for (unsigned long i = 0; i < len && i < RECON_QUOTE_MAX; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '\'' || c == '\\') {
			dst[n++] = '\\';
			dst[n++] = (char)c;
		} else if (c < 0x20 || c == 0x7f || (c >= 0x80 && (flags & RECON_QUOTE_ASCII))) {
			dst[n++] = '\\';
			dst[n++] = 'x';
			dst[n++] = hex[c >> 4];
			dst[n++] = hex[c & 0xf];
		} else {
			dst[n++] = (char)c;
		}
	}
	if (len > RECON_QUOTE_MAX) {
		memcpy(dst + n, "...", 3);
		n += 3;
	}
	dst[n] = '\0';
	return dst;
}
