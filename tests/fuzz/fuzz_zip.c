/*
 * fuzz_zip: the archive readers of src/recon_zip.c, which parse untrusted
 * downloads: recon_zip_open() + recon_zip_read() (Alipay's .zip bill, member
 * chosen by name, GBK names converted) and recon_zip_gz_open() +
 * recon_zip_gz_read() (.gz statements, concatenated members). The input is
 * the file as downloaded.
 *
 * Checked beyond the sanitizers, against recon_zip.h:
 *   - failures are RECON_EINPUT (or RECON_EIO) with a message, never a crash
 *     or a hang; *out is NULL after a failed open;
 *   - a member reads to its end (0) or fails: no read returns more than asked;
 *   - the member's name is valid, NUL-terminated text once opened;
 *   - the SHA-256 fed while reading is of the bytes as stored: after a zip
 *     opened, it equals the digest of the whole input (the archive is read
 *     whole at open).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_support.h"
#include "recon_err.h"
#include "recon_sha256.h"
#include "recon_zip.h"

#define CHUNK 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_zip: %s\n", what);
	abort();
}

static void check_err(int rc, const struct recon_err *err, const char *what)
{
	if ((rc != RECON_EINPUT && rc != RECON_EIO) || err->code != rc || !err->msg[0])
		fail(what);
}

/*
 * Reads a stream to its end through rd: the bytes read, -1 on a (checked)
 * error, -2 when cut off before the end (an inflation bomb).
 */
static long long drain(long (*rd)(void *, void *, size_t, struct recon_err *), void *h)
{
	static char buf[CHUNK + 16];
	struct recon_err err;
	long long total = 0;

	for (int i = 0; i < 1 << 20; i++) { /* at most 4 GiB: a bomb is cut off, not a hang */
		long n;
		recon_err_init(&err);
		memset(buf + CHUNK, 0x5a, 16);
		n = rd(h, buf, CHUNK, &err);
		for (int j = 0; j < 16; j++)
			if ((unsigned char)buf[CHUNK + j] != 0x5a)
				fail("read wrote past the size asked");
		if (n == 0)
			return total;
		if (n < 0) {
			check_err((int)n, &err, "read: bad failure");
			return -1;
		}
		if (n > CHUNK)
			fail("read returned more than asked");
		total += n;
		if (total > (1LL << 26))
			return -2; /* 64 MiB from a fuzz input: enough, not read to the end */
	}
	return -2;
}

static long zip_rd(void *h, void *buf, size_t n, struct recon_err *err)
{
	return recon_zip_read(h, buf, n, err);
}

static long gz_rd(void *h, void *buf, size_t n, struct recon_err *err)
{
	return recon_zip_gz_read(h, buf, n, err);
}

static int open_input(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		fail("cannot open the scratch file");
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *path;
	static const char *const wants[][2] = {{NULL, NULL}, {"业务明细", "汇总"}, {"csv", NULL}};
	struct recon_sha256 sha;
	struct recon_err err;
	char hex[65], want_hex[65];
	int fd, rc;

	if (!path)
		path = fuzz_scratch_path("input.bin");
	fuzz_write_file(path, data, size);
	recon_sha256_hex(data, size, want_hex);

	for (size_t w = 0; w < sizeof(wants) / sizeof(wants[0]); w++) {
		struct recon_zip *z = (struct recon_zip *)&err; /* must become NULL on failure */

		fd = open_input(path);
		recon_sha256_init(&sha);
		recon_err_init(&err);
		rc = recon_zip_open(&z, fd, path, w == 1 ? "GBK" : NULL, wants[w][0], wants[w][1],
				    &sha, &err);
		if (rc < 0) {
			check_err(rc, &err, "zip open: bad failure");
			if (z)
				fail("zip open: failure left *out set");
		} else {
			const char *m = recon_zip_member(z);
			if (!m || strlen(m) > (1u << 16))
				fail("zip: member name");
			recon_sha256_final_hex(&sha, hex);
			if (strcmp(hex, want_hex))
				fail("zip: the hash is not of the archive as stored");
			(void)drain(zip_rd, z);
			recon_zip_close(z);
		}
		close(fd);
	}

	{
		struct recon_gz *g = NULL;

		fd = open_input(path);
		recon_sha256_init(&sha);
		recon_err_init(&err);
		rc = recon_zip_gz_open(&g, fd, path, &sha, &err);
		if (rc < 0)
			fail("gz open failed");
		if (drain(gz_rd, g) >= 0) {
			/* read to the end: every stored byte went through the hash */
			recon_sha256_final_hex(&sha, hex);
			if (strcmp(hex, want_hex))
				fail("gz: the hash is not of the file as stored");
		}
		recon_zip_gz_close(g);
		close(fd);
	}
	return 0;
}
