/*
 * fuzz_zip: the zip reader of src/recon_zip.c on its own. The input is an
 * archive as downloaded: the harness writes it to a scratch file, opens it
 * with each of a few member selections (the only member; a name containing
 * "detail" without "summary"; a GBK-named member, as Alipay writes them) and,
 * when one opens, inflates the member to its end in small and odd-sized reads.
 *
 * It parses untrusted downloads, so beyond the sanitizers: a failure is
 * RECON_EINPUT or RECON_EIO with a message and *out NULL; no message holds a
 * raw control character (member names are escaped, so a crafted name cannot
 * fake a log line); a member never inflates past the caps the reader promises
 * (RECON_ZIP_MAX_INFLATED), and a read that ends cleanly has passed the
 * CRC-32 and size check.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void one(const char *enc, const char *want, const char *exclude)
{
	static const size_t sizes[] = {1, 7, 4096, 65536};
	struct recon_zip *z = (struct recon_zip *)1;
	struct recon_sha256 sha;
	struct recon_err err;
	char buf[65536];
	uint64_t total = 0;
	size_t k = 0;
	long n;
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
	for (;;) {
		n = recon_zip_read(z, buf, sizes[k++ % 4], &err);
		if (n <= 0)
			break;
		total += (uint64_t)n;
		if (total > RECON_ZIP_MAX_INFLATED)
			fail("inflated past RECON_ZIP_MAX_INFLATED", &err);
	}
	if (n < 0) {
		if (n != RECON_EINPUT || err.code != RECON_EINPUT || !err.msg[0])
			fail("read failed without RECON_EINPUT and a message", &err);
		check_message(&err);
	}
	recon_zip_close(z);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_write_file(zip_path, data, size);
	one(NULL, NULL, NULL);
	one(NULL, "detail", "summary");
	one("GBK", "\xe4\xb8\x9a\xe5\x8a\xa1\xe6\x98\x8e\xe7\xbb\x86", "\xe6\xb1\x87\xe6\x80\xbb");
	return 0;
}
