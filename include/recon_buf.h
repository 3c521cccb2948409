/*
 * recon_buf: a growable, always NUL-terminated byte buffer (git's strbuf).
 * buf.s is never NULL after recon_buf_init(); buf.len excludes the NUL.
 */
#ifndef RECON_BUF_H
#define RECON_BUF_H

#include <stddef.h>

#include "recon_err.h"

struct recon_buf {
	char *s;
	size_t len;
	size_t alloc;
};

void recon_buf_init(struct recon_buf *b);
void recon_buf_release(struct recon_buf *b); /* NULL-safe; b can be reused after init */
void recon_buf_reset(struct recon_buf *b);   /* len = 0, keeps memory */
void recon_buf_grow(struct recon_buf *b, size_t extra);
void recon_buf_add(struct recon_buf *b, const void *p, size_t n);
void recon_buf_adds(struct recon_buf *b, const char *s);
void recon_buf_addc(struct recon_buf *b, char c);
void recon_buf_addf(struct recon_buf *b, const char *fmt, ...) RECON_PRINTF(2, 3);
/* Takes the string; the buffer is re-initialised. Caller frees with free(). */
char *recon_buf_detach(struct recon_buf *b);

#endif
