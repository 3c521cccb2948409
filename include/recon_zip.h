/*
 * recon_zip: one member of a zip archive, inflated as a byte stream (Alipay
 * delivers its bill as a zip holding the 业务明细 detail file and its 汇总
 * summary).
 *
 * The central directory is read from the archive's end (pread: fd must be a
 * file), then the file once in order from its first byte, in chunks: every
 * byte goes to the caller's SHA-256 (whole once recon_zip_read() returned 0),
 * so the provenance hash is of the file as downloaded, and the member's bytes
 * are inflated as they go by (the archive is never held whole in memory).
 * Member names are converted to UTF-8 from the given encoding unless the
 * entry has the UTF-8 flag (Alipay writes GBK names without it). Members are
 * stored or deflated; the CRC-32 and size are checked at the end of the
 * member. ZIP64 sizes and offsets (a member over 4 GiB inflated, as Python's
 * zipfile writes from 2 GiB) are read from the ZIP64 end record and extra
 * field. Every length and offset is bounds-checked: a damaged archive is an
 * error (RECON_EINPUT), never a crash.
 */
#ifndef RECON_ZIP_H
#define RECON_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "recon_err.h"

#define RECON_ZIP_MAX_DIR ((uint64_t)64 << 20) /* a larger central directory is refused */
/* A member stating more than this inflated, or RECON_ZIP_MAX_RATIO times its compressed
   size when above RECON_ZIP_RATIO_FLOOR, is refused before inflating (a zip bomb). */
#define RECON_ZIP_MAX_INFLATED ((uint64_t)3 << 30)
#define RECON_ZIP_MAX_RATIO    200u
#define RECON_ZIP_RATIO_FLOOR  ((uint64_t)16 << 20)

struct recon_sha256;
struct recon_zip;

/* True when the first bytes are a zip local header ("PK\3\4"). */
int recon_zip_magic(const void *head, size_t len);

/*
 * Reads the archive's directory from fd (a file, read with pread; not closed;
 * `path` names it in messages), and picks the member whose UTF-8 name
 * contains `want` and not `exclude` (either may be NULL; with `want` NULL the
 * archive must hold exactly one file). `name_encoding` (NULL: UTF-8) is how
 * names without the UTF-8 flag are written. Caller frees *out with
 * recon_zip_close(). Reading the member feeds every byte of the file to
 * `hash` (may be NULL: then only the member is read). RECON_EINPUT for a
 * damaged archive or no/several matching members, RECON_EIO on read errors.
 */
RECON_MUSTCHECK int recon_zip_open(struct recon_zip **out, int fd, const char *path,
				   const char *name_encoding, const char *want, const char *exclude,
				   struct recon_sha256 *hash, struct recon_err *err);

/* The chosen member's name in UTF-8 (borrowed until close). */
const char *recon_zip_member(const struct recon_zip *z);
/* The chosen member's size inflated, as the archive states it. */
uint64_t recon_zip_member_size(const struct recon_zip *z);

/*
 * Inflates up to n bytes into buf. Returns the count (> 0), 0 at the end of
 * the member (after its CRC-32 and size matched), or RECON_EINPUT.
 */
RECON_MUSTCHECK long recon_zip_read(struct recon_zip *z, void *buf, size_t n,
				    struct recon_err *err);

void recon_zip_close(struct recon_zip *z); /* NULL-safe */

/*
 * A gzip-compressed statement (.gz, as some providers' downloads and most
 * archives keep them), inflated as a stream from fd (not closed; `path`
 * names it in messages); every compressed byte goes to `hash` (may be NULL),
 * so the provenance hash is of the file as stored. Concatenated members are
 * read one after the other, each member's CRC-32 and size checked.
 */
struct recon_gz;
/* True when the first bytes are a gzip header (1f 8b). */
int recon_zip_gz_magic(const void *head, size_t len);
/* Caller frees *out with recon_zip_gz_close(). */
RECON_MUSTCHECK int recon_zip_gz_open(struct recon_gz **out, int fd, const char *path,
				      struct recon_sha256 *hash, struct recon_err *err);
/*
 * The first n bytes of the stream, already read from fd (a pipe cannot be
 * read again to tell what it holds): they are inflated first, and hashed.
 * Right after open, before any read.
 */
void recon_zip_gz_prefix(struct recon_gz *g, const void *p, size_t n);
/*
 * fd is read without blocking (a pipe or FIFO): when it has nothing yet,
 * wait(arg, err) is called (0: try again; < 0, an error set: give up).
 */
void recon_zip_gz_wait(struct recon_gz *g, int (*wait)(void *arg, struct recon_err *err),
		       void *arg);
/*
 * Inflates up to n bytes into buf: the count (> 0), 0 at the end of the last
 * member, RECON_EINPUT for a damaged or truncated stream, RECON_EIO on read
 * errors.
 */
RECON_MUSTCHECK long recon_zip_gz_read(struct recon_gz *g, void *buf, size_t n,
				       struct recon_err *err);
void recon_zip_gz_close(struct recon_gz *g); /* NULL-safe */

#endif
