/*
 * recon_sha256: SHA-256 (FIPS 180-4), to record exactly which inputs and
 * which effective configuration a run read. Streaming: init, update any
 * number of times, final. Ours with the x86 SHA extensions where the CPU
 * has them (as fast as libcrypto's on one stream, and it hashes two streams
 * at once, recon_sha_lane_pair); else libcrypto's when built with it
 * (RECON_HAVE_LIBCRYPTO), else ours in plain C. The digests are the same.
 */
#ifndef RECON_SHA256_H
#define RECON_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"

struct recon_sha256 {
	bool own; /* u.own, not libcrypto's context */
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
/*
 * A lane: one stream's bytes hashed in order into a context, by the thread
 * that reads them or, once another thread offers help (it has nothing else
 * to do), by that one: the reader then queues what it reads where it lies
 * (a few pieces; when they are full it hashes them itself) and goes on
 * parsing. The digest is the same whoever hashed which bytes.
 */
struct recon_sha_lane;

struct recon_sha_lane *recon_sha_lane_new(struct recon_sha256 *ctx);
/*
 * The reader: n more bytes of the stream, queued where they are (no copy).
 * They stay unchanged until recon_sha_lane_wait() with the count returned
 * here (0: hashed already), or recon_sha_lane_flush(), has returned.
 */
uint64_t recon_sha_lane_update(struct recon_sha_lane *l, const void *p, size_t n);
/* The reader: returns once the bytes of the update that returned ticket are hashed. */
void recon_sha_lane_wait(struct recon_sha_lane *l, uint64_t ticket);
/* The reader: everything queued hashed into the context, which it may read from then on. */
void recon_sha_lane_flush(struct recon_sha_lane *l);
/*
 * Pairs two lanes whose readers run on two threads at once: queuer's reader
 * queues what it reads from then on (as for a helper; past half a queue it
 * hashes its oldest piece itself when it can), and reader's reader hashes
 * each piece it reads beside one of those, both streams' blocks at once
 * (2x the bytes per second of one stream here). Neither waits for the
 * other: where the queuer's lock is taken, the reader queues its own piece
 * too (its tickets count, as the queuer's do) and pairs it later. Best with
 * queuer the longer input: the other's reader is done first and helps with
 * the rest. false, nothing changed, where the CPU cannot (no SHA
 * extensions). Unpaired before either lane is freed.
 */
bool recon_sha_lane_pair(struct recon_sha_lane *reader, struct recon_sha_lane *queuer);
void recon_sha_lane_unpair(struct recon_sha_lane *reader);
/* Another thread: hashes what is queued; false when nothing was. Safe until lane_free(). */
bool recon_sha_lane_help(struct recon_sha_lane *l);
void recon_sha_lane_free(struct recon_sha_lane *l);

/* One-shot helpers. */
void recon_sha256_hex(const void *p, size_t n, char hex[65]);
/* Hashes a whole file; RECON_EUNAVAIL "cannot open 'path': ..." on failure. */
RECON_MUSTCHECK int recon_sha256_file(const char *path, char hex[65], struct recon_err *err);

#endif
