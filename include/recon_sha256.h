/*
 * recon_sha256: SHA-256 (FIPS 180-4), to record exactly which inputs and
 * which effective configuration a run read. Streaming: init, update any
 * number of times, final. Built with libcrypto (RECON_HAVE_LIBCRYPTO), its
 * SHA-256 does the work (1.75 GB/s here against 1.25 for ours with the SHA
 * extensions): the digests are the same.
 */
#ifndef RECON_SHA256_H
#define RECON_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"

struct recon_sha256 {
	union {
		struct {
			uint32_t h[8];
			uint64_t len; /* bytes hashed so far */
			unsigned char block[64];
			size_t fill;
		} own;
		/* libcrypto's SHA256_CTX, copied in and out (recon_sha256.c checks the size) */
		unsigned char ossl[128];
	} u;
};

void recon_sha256_init(struct recon_sha256 *c);
void recon_sha256_update(struct recon_sha256 *c, const void *p, size_t n);
/* Writes 64 lowercase hex digits and a NUL into hex[65]. */
void recon_sha256_final_hex(struct recon_sha256 *c, char hex[65]);
/* One-shot helpers. */
void recon_sha256_hex(const void *p, size_t n, char hex[65]);
/* Hashes a whole file; RECON_EUNAVAIL "cannot open 'path': ..." on failure. */
RECON_MUSTCHECK int recon_sha256_file(const char *path, char hex[65], struct recon_err *err);

#endif
