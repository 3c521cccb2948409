#include "recon_buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_mem.h"

static char empty_string[1];

void recon_buf_init(struct recon_buf *b)
{
	b->s = empty_string;
	b->len = 0;
	b->alloc = 0;
}

void recon_buf_release(struct recon_buf *b)
{
	if (!b)
		return;
	if (b->alloc)
		free(b->s);
	recon_buf_init(b);
}

void recon_buf_reset(struct recon_buf *b)
{
	b->len = 0;
	if (b->alloc)
		b->s[0] = '\0';
}

void recon_buf_grow(struct recon_buf *b, size_t extra)
{
	size_t need = recon_st_add(recon_st_add(b->len, extra), 1);
	size_t n;

	if (need <= b->alloc)
		return;
	n = b->alloc ? b->alloc : 64;
	while (n < need)
		n = recon_st_mult(n, 2);
	if (b->alloc) {
		b->s = recon_xrealloc(b->s, n);
	} else {
		b->s = recon_xmalloc(n);
		b->s[0] = '\0';
	}
	b->alloc = n;
}

void recon_buf_add(struct recon_buf *b, const void *p, size_t n)
{
	recon_buf_grow(b, n);
	memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void recon_buf_adds(struct recon_buf *b, const char *s)
{
	recon_buf_add(b, s, strlen(s));
}

void recon_buf_addc(struct recon_buf *b, char c)
{
	recon_buf_grow(b, 1);
	b->s[b->len++] = c;
	b->s[b->len] = '\0';
}

void recon_buf_addf(struct recon_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	recon_buf_grow(b, 64);
	va_start(ap, fmt);
	n = vsnprintf(b->s + b->len, b->alloc - b->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= b->alloc - b->len) {
		recon_buf_grow(b, (size_t)n);
		va_start(ap, fmt);
		vsnprintf(b->s + b->len, b->alloc - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

char *recon_buf_detach(struct recon_buf *b)
{
	char *s = b->alloc ? b->s : recon_xstrdup("");

	recon_buf_init(b);
	return s;
}
