/*
 * fuzz_zip: the download readers of src/recon_zip.c on their own. The input
 * is a file as downloaded: the harness writes it to a scratch file, opens it
 * as a zip with each of a few member selections (the only member; a name
 * containing "detail" without "summary"; a GBK-named member, as Alipay writes
 * them) and, when one opens, inflates the member to its end in small and
 * odd-sized reads; then reads it as a .gz (concatenated members) the same way.
 * The seeds include ZIP64 archives (sizes in the extra field, the directory
 * through the ZIP64 end record).
 *
 * It parses untrusted downloads, so beyond the sanitizers: a failure is
 * RECON_EINPUT or RECON_EIO with a message and *out NULL; no message holds a
 * raw control character (member names are escaped, so a crafted name cannot
 * fake a log line); a member never inflates past the caps the reader promises
 * (RECON_ZIP_MAX_INFLATED), and a read that ends cleanly has passed the
 * CRC-32 and size check, and the provenance hash is of the file as stored.
 *
 * The .gz is read twice: whole from the file, and with its first bytes
 * handed over apart (as from a pipe), so a header is split. The .gz reader
 * inflates with ISA-L; zlib, another implementation, reads
 * every input as concatenated gzip members too: when it reads the input
 * whole, recon must read it whole as well, to the same bytes (a valid file
 * zlib reads is never refused, nor read differently).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "fuzz_support.h"
#include "recon_err.h"
#include "recon_sha256.h"
#include "recon_zip.h"

static char *zip_path;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	zip_path = fuzz_scratch_path("statement.zip");
	return 0;
}

static void fail(const char *what, const struct recon_err *err)
{
	fprintf(stderr, "fuzz_zip: %s: %s: %s\n", what, err->where, err->msg);
	abort();
}

static void check_message(const struct recon_err *err)
{
	for (const char *p = err->msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			fail("a raw control character in the message", err);
}

static char want_hex[65]; /* SHA-256 of the input */

static void check_hash(struct recon_sha256 *sha, const char *what)
{
	char hex[65];
	struct recon_err err;

	recon_sha256_final_hex(sha, hex);
	if (strcmp(hex, want_hex)) {
		recon_err_init(&err);
		fail(what, &err);
	}
}

static long zip_rd(void *h, void *buf, size_t n, struct recon_err *err)
{
	return recon_zip_read(h, buf, n, err);
}

static long gz_rd(void *h, void *buf, size_t n, struct recon_err *err)
{
	return recon_zip_gz_read(h, buf, n, err);
}

#define GZ_STOP ((uint64_t)1 << 26) /* a .gz is read to its end or this much */

/* What zlib inflates from the input as concatenated gzip members: 1 read whole, 0 not. */
static int zlib_gz(const uint8_t *data, size_t size, unsigned char **out, size_t *len)
{
	z_stream zs;
	size_t cap = 1 << 16;
	int rc = Z_OK, whole = 0;

	*len = 0;
	*out = malloc(cap);
	memset(&zs, 0, sizeof(zs));
	if (!*out || inflateInit2(&zs, 15 + 16) != Z_OK)
		abort();
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)size;
	while (*len < GZ_STOP) {
		if (*len == cap && !(*out = realloc(*out, cap *= 2)))
			abort();
		zs.next_out = *out + *len;
		zs.avail_out = (uInt)(cap - *len);
		rc = inflate(&zs, Z_NO_FLUSH);
		*len = cap - zs.avail_out;
		if (rc == Z_STREAM_END) {
			if (!zs.avail_in) {
				whole = 1;
				break;
			}
			if (inflateReset(&zs) != Z_OK)
				break;
		} else if (rc != Z_OK && !(rc == Z_BUF_ERROR && zs.avail_in)) {
			break;
		}
	}
	inflateEnd(&zs);
	return whole;
}

/*
 * Reads h to its end in small and odd-sized reads, or until `stop` bytes
 * (beyond which a read is a failure when `cap`). Returns the last read's
 * result: 0 at the end, < 0 a checked failure, > 0 stopped early.
 */
static long drain(long (*rd)(void *h, void *buf, size_t n, struct recon_err *err), void *h,
		  uint64_t stop, int cap, unsigned char **keep, size_t *kept)
{
	static const size_t sizes[] = {1, 7, 4096, 65536};
	static char buf[65536];
	size_t kcap = 0;
	struct recon_err err;
	uint64_t total = 0;
	size_t k = 0;
	long n;

	recon_err_init(&err);
	while ((n = rd(h, buf, sizes[k % 4], &err)) > 0) {
		if ((size_t)n > sizes[k++ % 4])
			fail("a read returned more than asked", &err);
		if (keep) {
			/* the bytes read, for comparing */
			while (*kept + (size_t)n > kcap)
				if (!(*keep = realloc(*keep, kcap = kcap ? 2 * kcap : 65536)))
					abort();
			memcpy(*keep + *kept, buf, (size_t)n);
			*kept += (size_t)n;
		}
		if ((total += (uint64_t)n) > stop) {
			if (cap)
				fail("inflated past RECON_ZIP_MAX_INFLATED", &err);
			return n;
		}
	}
	if (n < 0) {
		if ((n != RECON_EINPUT && n != RECON_EIO) || err.code != n || !err.msg[0])
			fail("a read failed without RECON_EINPUT/EIO and a message", &err);
		check_message(&err);
	}
	return n;
}

static void one(const char *enc, const char *want, const char *exclude)
{
	struct recon_zip *z = (struct recon_zip *)1;
	struct recon_sha256 sha;
	struct recon_err err;
	int fd = open(zip_path, O_RDONLY | O_CLOEXEC), rc;

	if (fd < 0)
		abort();
	recon_sha256_init(&sha);
	recon_err_init(&err);
	rc = recon_zip_open(&z, fd, zip_path, enc, want, exclude, &sha, &err);
	if (rc < 0) {
		if ((rc != RECON_EINPUT && rc != RECON_EIO) || err.code != rc || !err.msg[0] || z)
			fail("open failed without RECON_EINPUT/EIO and a message, or left *out",
			     &err);
		check_message(&err);
		close(fd);
		return;
	}
	if (!z || !recon_zip_member(z))
		abort();
	if (drain(zip_rd, z, RECON_ZIP_MAX_INFLATED, 1, NULL, NULL) == 0)
		check_hash(&sha, "zip: the hash is not of the archive as stored");
	recon_zip_close(z);
	close(fd);
}

/* The input as a .gz, read to its end (or 64 MiB: enough from a fuzz input), and by zlib. */
/*
 * The first `prefix` bytes handed over apart, as a pipe's are (the caller
 * reads a few to see what the input holds): a header split there.
 */
static void gz(const uint8_t *data, size_t size, size_t prefix)
{
	struct recon_gz *g = NULL;
	struct recon_sha256 sha;
	struct recon_err err;
	int fd = open(zip_path, O_RDONLY | O_CLOEXEC);
	unsigned char *mine = NULL, *theirs = NULL;
	size_t nmine = 0, ntheirs = 0;
	long rc;

	if (fd < 0)
		abort();
	recon_sha256_init(&sha);
	recon_err_init(&err);
	if (recon_zip_gz_open(&g, fd, zip_path, &sha, &err) < 0)
		fail("gz open failed", &err);
	if (prefix > size)
		prefix = size;
	if (prefix) {
		if (lseek(fd, (off_t)prefix, SEEK_SET) != (off_t)prefix)
			abort();
		recon_zip_gz_prefix(g, data, prefix);
	}
	rc = drain(gz_rd, g, GZ_STOP, 0, &mine, &nmine);
	if (rc == 0)
		check_hash(&sha, "gz: the hash is not of the file as stored");
	if (zlib_gz(data, size, &theirs, &ntheirs)) {
		recon_err_init(&err);
		if (rc != 0)
			fail("gz: zlib reads the input whole, recon does not", &err);
		if (nmine != ntheirs || memcmp(mine, theirs, nmine))
			fail("gz: recon and zlib inflate the input to different bytes", &err);
	}
	free(mine);
	free(theirs);
	recon_zip_gz_close(g);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_write_file(zip_path, data, size);
	recon_sha256_hex(data, size, want_hex);
	one(NULL, NULL, NULL);
	one(NULL, "detail", "summary");
	one("GBK", "\xe4\xb8\x9a\xe5\x8a\xa1\xe6\x98\x8e\xe7\xbb\x86", "\xe6\xb1\x87\xe6\x80\xbb");
	gz(data, size, 0);
	gz(data, size, size ? 1 + data[size - 1] % 24 : 0); /* inside a header, mostly */
	return 0;
}
