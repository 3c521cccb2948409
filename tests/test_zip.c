/*
 * Tests for src/recon_zip.c on archives built here (stored and deflated
 * members, honest or lying about their sizes): member names from the archive
 * are shown escaped in messages (a crafted name cannot print a fake log
 * line), several matching members are listed by their own names, and a
 * member that would inflate beyond the caps (a zip bomb) is refused before
 * it is inflated (issue 12 #10, #12). The real Alipay download is covered by
 * test_formats.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "recon_buf.h"
#include "recon_err.h"
#include "recon_mem.h"
#include "recon_zip.h"

struct member {
	const char *name;
	const void *data;
	size_t len;
	int deflated;
	uint32_t lie_usize; /* stated uncompressed size instead of the real one (0: honest) */
};

static void put16(struct recon_buf *b, uint32_t v)
{
	unsigned char c[2] = {(unsigned char)v, (unsigned char)(v >> 8)};

	recon_buf_add(b, c, 2);
}

static void put32(struct recon_buf *b, uint32_t v)
{
	put16(b, v & 0xffff);
	put16(b, v >> 16);
}

/* Raw deflate of data; *out malloc'ed. */
static size_t deflate_raw(const void *data, size_t len, unsigned char **out)
{
	z_stream zs;
	size_t cap = len + len / 100 + 1024;

	memset(&zs, 0, sizeof(zs));
	*out = malloc(cap);
	assert_non_null(*out);
	assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, -MAX_WBITS, 9, Z_DEFAULT_STRATEGY), Z_OK);
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	zs.next_out = *out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	deflateEnd(&zs);
	return cap - zs.avail_out;
}

/* An archive of the members in a temporary file; returns its descriptor. */
static int zip_file(const struct member *m, size_t n)
{
	struct recon_buf b, cd;
	uint32_t *offs = calloc(n, sizeof(*offs)), *csz = calloc(n, sizeof(*csz));
	uint32_t *crcs = calloc(n, sizeof(*crcs));
	FILE *f = tmpfile();
	int fd;

	assert_non_null(f);
	recon_buf_init(&b);
	recon_buf_init(&cd);
	for (size_t i = 0; i < n; i++) {
		unsigned char *z = NULL;
		size_t zl = m[i].len;
		const void *body = m[i].data;
		uint32_t usize = m[i].lie_usize ? m[i].lie_usize : (uint32_t)m[i].len;

		if (m[i].deflated) {
			zl = deflate_raw(m[i].data, m[i].len, &z);
			body = z;
		}
		crcs[i] = (uint32_t)crc32(crc32(0L, Z_NULL, 0), m[i].data, (uInt)m[i].len);
		offs[i] = (uint32_t)b.len;
		csz[i] = (uint32_t)zl;
		put32(&b, 0x04034b50u);
		put16(&b, 20);
		put16(&b, 0x0800); /* UTF-8 names */
		put16(&b, m[i].deflated ? 8 : 0);
		put32(&b, 0);
		put32(&b, crcs[i]);
		put32(&b, csz[i]);
		put32(&b, usize);
		put16(&b, (uint32_t)strlen(m[i].name));
		put16(&b, 0);
		recon_buf_adds(&b, m[i].name);
		recon_buf_add(&b, body, zl);
		free(z);

		put32(&cd, 0x02014b50u);
		put16(&cd, 20);
		put16(&cd, 20);
		put16(&cd, 0x0800);
		put16(&cd, m[i].deflated ? 8 : 0);
		put32(&cd, 0);
		put32(&cd, crcs[i]);
		put32(&cd, csz[i]);
		put32(&cd, usize);
		put16(&cd, (uint32_t)strlen(m[i].name));
		put16(&cd, 0);
		put16(&cd, 0);
		put16(&cd, 0);
		put16(&cd, 0);
		put32(&cd, 0);
		put32(&cd, offs[i]);
		recon_buf_adds(&cd, m[i].name);
	}
	{
		uint32_t cd_off = (uint32_t)b.len;
		recon_buf_add(&b, cd.s, cd.len);
		put32(&b, 0x06054b50u);
		put16(&b, 0);
		put16(&b, 0);
		put16(&b, (uint32_t)n);
		put16(&b, (uint32_t)n);
		put32(&b, (uint32_t)cd.len);
		put32(&b, cd_off);
		put16(&b, 0);
	}
	assert_int_equal(fwrite(b.s, 1, b.len, f), b.len);
	fflush(f);
	fd = dup(fileno(f));
	fclose(f);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	recon_buf_release(&b);
	recon_buf_release(&cd);
	free(offs);
	free(csz);
	free(crcs);
	return fd;
}

static void test_zip_reads_stored_and_deflated(void **state)
{
	static const char csv[] = "id,amount\nA-1,1.00\n";
	const struct member m[] = {{"bill.csv", csv, sizeof(csv) - 1, 1, 0},
				   {"readme.txt", "x", 1, 0, 0}};
	struct recon_zip *z = NULL;
	struct recon_err err;
	char buf[64];
	int fd = zip_file(m, 2);
	long n;

	(void)state;
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, "t.zip", NULL, ".csv", NULL, NULL, &err), 0);
	assert_string_equal(recon_zip_member(z), "bill.csv");
	n = recon_zip_read(z, buf, sizeof(buf), &err);
	assert_int_equal(n, (long)sizeof(csv) - 1);
	assert_memory_equal(buf, csv, sizeof(csv) - 1);
	assert_int_equal(recon_zip_read(z, buf, sizeof(buf), &err), 0);
	recon_zip_close(z);
	close(fd);
}

/* A crafted member name prints no fake line; several matches are named by their own names. */
static void test_zip_names_escaped_and_matching_listed(void **state)
{
	const struct member m[] = {{"a_detail.csv", "1", 1, 0, 0},
				   {"b_summary.csv", "2", 1, 0, 0},
				   {"c_detail.csv\nrecon: run succeeded", "3", 1, 0, 0}};
	struct recon_zip *z = NULL;
	struct recon_err err;
	int fd = zip_file(m, 3);

	(void)state;
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, "t.zip", NULL, "detail", NULL, NULL, &err),
			 RECON_EINPUT);
	assert_null(z);
	assert_null(strchr(err.msg, '\n'));
	assert_non_null(strstr(err.msg, "more than one member"));
	assert_non_null(
	    strstr(err.msg, "(matching: 'a_detail.csv', 'c_detail.csv\\x0arecon: run succeeded')"));
	assert_null(strstr(err.msg, "b_summary"));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, "t.zip", NULL, "nothing", NULL, NULL, &err),
			 RECON_EINPUT);
	assert_null(strchr(err.msg, '\n'));
	assert_non_null(strstr(err.msg, "'b_summary.csv'"));
	close(fd);
}

/* Zip bombs: refused before inflating, by the stated size or the ratio. */
static void test_zip_inflate_caps(void **state)
{
	const size_t big = (size_t)24 << 20; /* 24 MiB of newlines: ~1000 times smaller deflated */
	char *nl = malloc(big);
	struct recon_zip *z = NULL;
	struct recon_err err;
	int fd;

	(void)state;
	assert_non_null(nl);
	memset(nl, '\n', big);
	{
		const struct member m[] = {{"bill.csv", nl, big, 1, 0}};
		fd = zip_file(m, 1);
	}
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, "bomb.zip", NULL, NULL, NULL, NULL, &err),
			 RECON_EINPUT);
	assert_null(z);
	assert_non_null(strstr(err.msg, "member 'bill.csv' would inflate to 25165824 bytes"));
	close(fd);
	{
		/* a stated 4 GiB from a few bytes */
		const struct member m[] = {{"bill.csv", "\n\n\n\n", 4, 1, 0xFFFFFFFFu}};
		fd = zip_file(m, 1);
	}
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, "bomb.zip", NULL, NULL, NULL, NULL, &err),
			 RECON_EINPUT);
	assert_non_null(strstr(err.msg, "would inflate to 4294967295 bytes"));
	close(fd);
	{
		/* under the floor a high ratio is fine (a small file of blanks) */
		const struct member m[] = {{"bill.csv", nl, (size_t)1 << 20, 1, 0}};
		fd = zip_file(m, 1);
	}
	recon_err_init(&err);
	assert_int_equal(recon_zip_open(&z, fd, "ok.zip", NULL, NULL, NULL, NULL, &err), 0);
	recon_zip_close(z);
	close(fd);
	free(nl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zip_reads_stored_and_deflated),
	    cmocka_unit_test(test_zip_names_escaped_and_matching_listed),
	    cmocka_unit_test(test_zip_inflate_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
