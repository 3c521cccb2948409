/*
 * Tests for src/recon_zip.c on archives built here (stored and deflated
 * members, honest or lying about their sizes): member names from the archive
 * are shown escaped in messages (a crafted name cannot print a fake log
 * line), several matching members are listed by their own names, and a
 * member that would inflate beyond the caps (a zip bomb) is refused before
 * it is inflated (issue 12 #10, #12). ZIP64 archives (sizes and offsets in
 * the 0x0001 extra field, the central directory through the ZIP64 end record)
 * are read, and the caps apply to their 64-bit sizes. The real Alipay download
 * is covered by the alipay_bill_zip cases (alipay_bill_zip64: Info-ZIP's own
 * ZIP64 output).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
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
#include "recon_sha256.h"
#include "recon_zip.h"

struct member {
	const char *name;
	const void *data;
	size_t len;
	int deflated;	    /* 1: deflated; 2: method deflate with no compressed bytes at all */
	uint64_t lie_usize; /* stated uncompressed size instead of the real one (0: honest) */
};

/* How an archive is written: classic, or with ZIP64 fields. */
enum layout {
	CLASSIC,
	ZIP64,	      /* sizes and offset 0xFFFFFFFF, in the extra field; ZIP64 end record */
	ZIP64_SHORT,  /* ... with the extra field holding the inflated size only */
	ZIP64_LOCATOR /* classic fields, a ZIP64 end record and locator anyway */
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

static void put64(struct recon_buf *b, uint64_t v)
{
	put32(b, (uint32_t)v);
	put32(b, (uint32_t)(v >> 32));
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

/* A file holding b's bytes; returns its descriptor, at offset 0. */
static int file_of(const struct recon_buf *b)
{
	FILE *f = tmpfile();
	int fd;

	assert_non_null(f);
	assert_int_equal(fwrite(b->s, 1, b->len, f), b->len);
	fflush(f);
	fd = dup(fileno(f));
	fclose(f);
	assert_true(fd >= 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* An archive of the members, written into b in the given layout. */
static void zip_build(struct recon_buf *b, const struct member *m, size_t n, enum layout how)
{
	struct recon_buf cd;
	bool z64 = how == ZIP64 || how == ZIP64_SHORT;

	recon_buf_init(&cd);
	for (size_t i = 0; i < n; i++) {
		unsigned char *z = NULL;
		size_t zl = m[i].len;
		const void *body = m[i].data;
		uint64_t usize = m[i].lie_usize ? m[i].lie_usize : m[i].len, off = b->len;
		uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), m[i].data, (uInt)m[i].len);
		uint32_t nlen = (uint32_t)strlen(m[i].name);
		uint32_t xlen = how == ZIP64 ? 32 : how == ZIP64_SHORT ? 16 : 0;

		if (m[i].deflated == 1) {
			zl = deflate_raw(m[i].data, m[i].len, &z);
			body = z;
		} else if (m[i].deflated == 2) {
			zl = 0;
		}
		put32(b, 0x04034b50u);
		put16(b, z64 ? 45 : 20);
		put16(b, 0x0800); /* UTF-8 names */
		put16(b, m[i].deflated ? 8 : 0);
		put32(b, 0);
		put32(b, crc);
		put32(b, z64 ? 0xFFFFFFFFu : (uint32_t)zl);
		put32(b, z64 ? 0xFFFFFFFFu : (uint32_t)usize);
		put16(b, nlen);
		put16(b, z64 ? 20 : 0);
		recon_buf_adds(b, m[i].name);
		if (z64) {
			put16(b, 1);
			put16(b, 16);
			put64(b, usize);
			put64(b, zl);
		}
		recon_buf_add(b, body, zl);
		free(z);

		put32(&cd, 0x02014b50u);
		put16(&cd, z64 ? 45 : 20);
		put16(&cd, z64 ? 45 : 20);
		put16(&cd, 0x0800);
		put16(&cd, m[i].deflated ? 8 : 0);
		put32(&cd, 0);
		put32(&cd, crc);
		put32(&cd, how == ZIP64 ? 0xFFFFFFFFu : (uint32_t)zl);
		put32(&cd, z64 ? 0xFFFFFFFFu : (uint32_t)usize);
		put16(&cd, nlen);
		put16(&cd, xlen);
		put16(&cd, 0);
		put16(&cd, 0);
		put16(&cd, 0);
		put32(&cd, 0);
		put32(&cd, how == ZIP64 ? 0xFFFFFFFFu : (uint32_t)off);
		recon_buf_adds(&cd, m[i].name);
		if (xlen) {
			put16(&cd, 0x5455); /* another field first, as Info-ZIP writes them */
			put16(&cd, 0);
			put16(&cd, 1);
			put16(&cd, xlen - 8);
			put64(&cd, usize);
			if (how == ZIP64) {
				put64(&cd, zl);
				put64(&cd, off);
			}
		}
	}
	{
		uint64_t cd_off = b->len, rec = cd_off + cd.len;
		bool locator = how != CLASSIC;

		recon_buf_add(b, cd.s, cd.len);
		if (locator) {
			put32(b, 0x06064b50u);
			put64(b, 44);
			put16(b, 45);
			put16(b, 45);
			put32(b, 0);
			put32(b, 0);
			put64(b, n);
			put64(b, n);
			put64(b, cd.len);
			put64(b, cd_off);
			put32(b, 0x07064b50u);
			put32(b, 0);
			put64(b, rec);
			put32(b, 1);
		}
		put32(b, 0x06054b50u);
		put16(b, 0);
		put16(b, 0);
		put16(b, z64 ? 0xFFFF : (uint32_t)n);
		put16(b, z64 ? 0xFFFF : (uint32_t)n);
		put32(b, z64 ? 0xFFFFFFFFu : (uint32_t)cd.len);
		put32(b, z64 ? 0xFFFFFFFFu : (uint32_t)cd_off);
		put16(b, 0);
	}
	recon_buf_release(&cd);
}

/* An archive of the members in a temporary file; returns its descriptor. */
static int zip_file_as(const struct member *m, size_t n, enum layout how)
{
	struct recon_buf b;
	int fd;

	recon_buf_init(&b);
	zip_build(&b, m, n, how);
	fd = file_of(&b);
	recon_buf_release(&b);
	return fd;
}

static int zip_file(const struct member *m, size_t n)
{
	return zip_file_as(m, n, CLASSIC);
}

/* Opens fd choosing `want`; returns open's result, err filled. */
static int open_fd(struct recon_zip **z, int fd, const char *want, struct recon_err *err)
{
	recon_err_init(err);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return recon_zip_open(z, fd, "t.zip", NULL, want, NULL, NULL, err);
}

/* Reads the member to its end into out (at most cap bytes); returns the count. */
static size_t read_member(struct recon_zip *z, char *out, size_t cap)
{
	struct recon_err err;
	size_t got = 0;
	long n;

	recon_err_init(&err);
	while ((n = recon_zip_read(z, out + got, cap - got < 5 ? cap - got : 5, &err)) > 0)
		got += (size_t)n;
	assert_int_equal(n, 0);
	return got;
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

/* ZIP64: sizes and offsets from the extra field, the directory through the ZIP64 end record. */
static void test_zip_zip64_reads(void **state)
{
	static const char csv[] = "id,amount\nA-1,1.00\nA-2,2.50\n";
	const struct member m[] = {{"readme.txt", "notes", 5, 0, 0},
				   {"bill.csv", csv, sizeof(csv) - 1, 1, 0},
				   {"stored.csv", csv, sizeof(csv) - 1, 0, 0}};
	static const enum layout layouts[] = {ZIP64, ZIP64_SHORT, ZIP64_LOCATOR};
	struct recon_zip *z = NULL;
	struct recon_err err;
	char buf[64];

	(void)state;
	for (size_t l = 0; l < 3; l++) {
		int fd = zip_file_as(m, 3, layouts[l]);

		assert_int_equal(open_fd(&z, fd, "bill", &err), 0);
		assert_string_equal(recon_zip_member(z), "bill.csv");
		assert_int_equal(recon_zip_member_size(z), sizeof(csv) - 1);
		assert_int_equal(read_member(z, buf, sizeof(buf)), sizeof(csv) - 1);
		assert_memory_equal(buf, csv, sizeof(csv) - 1);
		recon_zip_close(z);
		assert_int_equal(open_fd(&z, fd, "stored", &err), 0);
		assert_int_equal(read_member(z, buf, sizeof(buf)), sizeof(csv) - 1);
		assert_memory_equal(buf, csv, sizeof(csv) - 1);
		recon_zip_close(z);
		close(fd);
	}
}

/* The caps apply to a 64-bit stated size; a stated size a byte off fails the size check. */
static void test_zip_zip64_caps(void **state)
{
	struct recon_zip *z = NULL;
	struct recon_err err;
	char buf[16];
	int fd;

	(void)state;
	{
		const struct member m[] = {{"bill.csv", "\n\n\n\n", 4, 1, (uint64_t)1 << 40}};
		fd = zip_file_as(m, 1, ZIP64);
	}
	assert_int_equal(open_fd(&z, fd, NULL, &err), RECON_EINPUT);
	assert_null(z);
	assert_non_null(strstr(err.msg, "would inflate to 1099511627776 bytes from"));
	close(fd);
	{
		/* 4 GiB + 4 states 4 in its low 32 bits: the high half counts */
		const struct member m[] = {{"bill.csv", "\n\n\n\n", 4, 0, ((uint64_t)1 << 32) + 4}};
		fd = zip_file_as(m, 1, ZIP64);
	}
	assert_int_equal(open_fd(&z, fd, NULL, &err), RECON_EINPUT);
	assert_non_null(strstr(err.msg, "would inflate to 4294967300 bytes"));
	close(fd);
	{
		const struct member m[] = {{"bill.csv", "abcd", 4, 1, 5}};
		fd = zip_file_as(m, 1, ZIP64);
	}
	assert_int_equal(open_fd(&z, fd, NULL, &err), 0);
	recon_err_init(&err);
	assert_int_equal(recon_zip_read(z, buf, sizeof(buf), &err), 4);
	assert_int_equal(recon_zip_read(z, buf, sizeof(buf), &err), RECON_EINPUT);
	assert_non_null(strstr(err.msg, "fails its CRC-32/size check"));
	/* asked again, it fails again: never an end after a failed check */
	recon_err_init(&err);
	assert_int_equal(recon_zip_read(z, buf, sizeof(buf), &err), RECON_EINPUT);
	recon_zip_close(z);
	close(fd);
}

/* Damaged ZIP64 records and fields are errors with their reason, never a read out of bounds. */
static void test_zip_zip64_damaged(void **state)
{
	const struct member m[] = {{"bill.csv", "id\n", 3, 0, 0}};
	struct recon_zip *z = NULL;
	struct recon_err err;
	struct recon_buf b;
	size_t end, loc;
	int fd;

	(void)state;
	recon_buf_init(&b);
	zip_build(&b, m, 1, ZIP64);
	end = b.len - 22;
	loc = end - 20;
	{
		/* the locator points past itself */
		struct recon_buf c;
		recon_buf_init(&c);
		recon_buf_add(&c, b.s, b.len);
		c.s[loc + 8] = (char)0xF0;
		fd = file_of(&c);
		assert_int_equal(open_fd(&z, fd, NULL, &err), RECON_EINPUT);
		assert_non_null(strstr(err.msg, "bad ZIP64 end of central directory"));
		close(fd);
		/* ... or at bytes that are not a ZIP64 end record */
		memcpy(c.s, b.s, b.len);
		c.s[loc + 8] = 0;
		fd = file_of(&c);
		assert_int_equal(open_fd(&z, fd, NULL, &err), RECON_EINPUT);
		assert_non_null(strstr(err.msg, "bad ZIP64 end of central directory"));
		close(fd);
		/* the ZIP64 record's directory offset beyond the archive */
		memcpy(c.s, b.s, b.len);
		c.s[loc - 56 + 48 + 7] = 0x01;
		fd = file_of(&c);
		assert_int_equal(open_fd(&z, fd, NULL, &err), RECON_EINPUT);
		assert_non_null(strstr(err.msg, "central directory out of bounds"));
		close(fd);
		/* the directory's size running into the ZIP64 end record */
		memcpy(c.s, b.s, b.len);
		c.s[loc - 56 + 40] = (char)((unsigned char)c.s[loc - 56 + 40] + 56);
		fd = file_of(&c);
		assert_int_equal(open_fd(&z, fd, NULL, &err), RECON_EINPUT);
		assert_non_null(strstr(err.msg, "central directory out of bounds"));
		close(fd);
		recon_buf_release(&c);
	}
	{
		/* the local header offset in the extra field beyond the archive */
		struct recon_buf c;
		recon_buf_init(&c);
		recon_buf_add(&c, b.s, b.len);
		c.s[loc - 56 - 1] = 0x7F; /* the top byte of the last field: the offset */
		fd = file_of(&c);
		assert_int_equal(open_fd(&z, fd, NULL, &err), RECON_EINPUT);
		assert_non_null(strstr(err.msg, "bad local header for 'bill.csv'"));
		close(fd);
		recon_buf_release(&c);
	}
	recon_buf_release(&b);
	{
		/* sizes and offset all 0xFFFFFFFF, the extra field holding one of them */
		const struct member big[] = {{"bill.csv", "id\n", 3, 0, 0}};
		recon_buf_init(&b);
		zip_build(&b, big, 1, ZIP64_SHORT);
		/* ZIP64_SHORT leaves the compressed size and offset classic: claim them too */
		{
			size_t cd = b.len - 22 - 20 - 56 - (46 + 8 + 16);
			assert_int_equal(b.s[cd], 'P');
			memset(b.s + cd + 20, 0xFF, 4);
		}
		fd = file_of(&b);
		assert_int_equal(open_fd(&z, fd, NULL, &err), RECON_EINPUT);
		assert_non_null(strstr(err.msg, "ZIP64 field of 'bill.csv' is too short"));
		close(fd);
		recon_buf_release(&b);
	}
}

/*
 * The archive streams through in chunks: a member spanning several of them,
 * between others, inflates to its bytes, and the hash is of the whole file
 * (the bytes before the member, the member, and the directory after it).
 */
static void test_zip_streams_and_hashes_whole_file(void **state)
{
	const size_t big = (size_t)5 << 20;
	unsigned char *body = malloc(big), *out = malloc(big + 16);
	struct recon_sha256 sha;
	struct recon_zip *z = NULL;
	struct recon_err err;
	struct recon_buf b;
	char got[65], want[65];
	uint32_t x = 2463534242u;

	(void)state;
	assert_non_null(body);
	assert_non_null(out);
	for (size_t i = 0; i < big; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5; /* xorshift: barely compressible */
		body[i] = (unsigned char)(i % 61 == 60 ? '\n' : 'a' + x % 16);
	}
	for (int deflated = 0; deflated < 2; deflated++) {
		const struct member m[] = {{"a.txt", body, (size_t)3 << 20, 0, 0},
					   {"bill.csv", body, big, deflated, 0},
					   {"z.txt", body + 7, (size_t)2 << 20, 1, 0}};
		static const size_t sizes[] = {1, 4093, 65536, 1 << 20, 3};
		size_t total = 0, k = 0;
		long n;
		int fd;

		recon_buf_init(&b);
		zip_build(&b, m, 3, deflated ? ZIP64 : CLASSIC);
		recon_sha256_hex(b.s, b.len, want);
		fd = file_of(&b);
		recon_sha256_init(&sha);
		recon_err_init(&err);
		assert_int_equal(recon_zip_open(&z, fd, "t.zip", NULL, "bill", NULL, &sha, &err),
				 0);
		while ((n = recon_zip_read(z, out + total, sizes[k++ % 5], &err)) > 0)
			total += (size_t)n;
		assert_int_equal(n, 0);
		assert_int_equal(total, big);
		assert_memory_equal(out, body, big);
		recon_sha256_final_hex(&sha, got);
		assert_string_equal(got, want);
		recon_zip_close(z);
		close(fd);
		recon_buf_release(&b);
	}
	free(body);
	free(out);
}

/* Empty members (Info-ZIP stores a 0-byte file with no compressed bytes) end at once. */
static void test_zip_empty_members(void **state)
{
	const struct member m[] = {{"empty.csv", "", 0, 0, 0},
				   {"empty-deflated.csv", "", 0, 1, 0},
				   {"last.csv", "x", 1, 0, 0}};
	static const char *const want[] = {"empty.csv", "empty-deflated.csv"};
	struct recon_sha256 sha;
	struct recon_zip *z = NULL;
	struct recon_err err;
	struct recon_buf b;
	char buf[8], got[65], hex[65];

	(void)state;
	for (int how = 0; how < 2; how++) {
		const struct member none[] = {{"none.csv", "", 0, 2, 0}};
		int fd;

		/* deflated, but without even an empty deflate stream: cut short (as unzip says) */
		fd = zip_file_as(none, 1, how ? ZIP64 : CLASSIC);
		assert_int_equal(open_fd(&z, fd, NULL, &err), 0);
		assert_int_equal(recon_zip_read(z, buf, sizeof(buf), &err), RECON_EINPUT);
		assert_non_null(strstr(err.msg, "member 'none.csv': compressed data cut short"));
		recon_zip_close(z);
		close(fd);
		recon_buf_init(&b);
		zip_build(&b, m, 3, how ? ZIP64 : CLASSIC);
		recon_sha256_hex(b.s, b.len, hex);
		fd = file_of(&b);
		for (size_t w = 0; w < 2; w++) {
			recon_sha256_init(&sha);
			recon_err_init(&err);
			assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
			assert_int_equal(
			    recon_zip_open(&z, fd, "t.zip", NULL, want[w], NULL, &sha, &err), 0);
			assert_int_equal(recon_zip_read(z, buf, sizeof(buf), &err), 0);
			recon_sha256_final_hex(&sha, got);
			assert_string_equal(got, hex);
			recon_zip_close(z);
		}
		close(fd);
		recon_buf_release(&b);
	}
}

/* A file that shrinks or grows between open and the end of the read is refused. */
static void test_zip_file_changes_while_read(void **state)
{
	const size_t big = (size_t)3 << 20;
	char *body = malloc(big), *buf = malloc(big + 64);
	const struct member m[] = {{"bill.csv", body, big, 0, 0}};
	struct recon_sha256 sha;
	struct recon_zip *z = NULL;
	struct recon_err err;
	struct recon_buf b;
	long n = 0;

	(void)state;
	assert_non_null(body);
	assert_non_null(buf);
	memset(body, 'a', big);
	recon_buf_init(&b);
	zip_build(&b, m, 1, CLASSIC);
	for (int c = 0; c < 3; c++) {
		/* cut into the directory, cut into the member, grown */
		static const long delta[] = {-10, -(1L << 20), 4096};
		int fd = file_of(&b);
		size_t got = 0;

		recon_sha256_init(&sha);
		recon_err_init(&err);
		assert_int_equal(recon_zip_open(&z, fd, "t.zip", NULL, NULL, NULL, &sha, &err), 0);
		assert_int_equal(ftruncate(fd, (off_t)((long)b.len + delta[c])), 0);
		while ((n = recon_zip_read(z, buf + got, big + 64 - got, &err)) > 0)
			got += (size_t)n;
		assert_int_equal(n, RECON_EINPUT);
		assert_non_null(strstr(err.msg, "the file changed while it was read"));
		recon_zip_close(z);
		close(fd);
	}
	recon_buf_release(&b);
	free(body);
	free(buf);
}

/* A classic archive whose directory happens to end in locator-like bytes is read as classic. */
static void test_zip_fake_locator(void **state)
{
	const struct member m[] = {{"bill.csv", "id\n", 3, 0, 0},
				   {"notes-PK\x06\x07"
				    "abcdefghijklmnop",
				    "n", 1, 0, 0}};
	struct recon_zip *z = NULL;
	struct recon_err err;
	char buf[8];
	int fd = zip_file(m, 2);

	struct recon_buf b;

	(void)state;
	assert_int_equal(open_fd(&z, fd, "bill", &err), 0);
	assert_int_equal(read_member(z, buf, sizeof(buf)), 3);
	recon_zip_close(z);
	close(fd);
	/* ... and one whose locator-like bytes point inside the file, at a local header */
	recon_buf_init(&b);
	zip_build(&b, m, 2, CLASSIC);
	assert_memory_equal(b.s + b.len - 22 - 20, "PK\x06\x07", 4);
	memset(b.s + b.len - 22 - 16, 0, 12); /* disk 0, record at offset 0 */
	fd = file_of(&b);
	assert_int_equal(open_fd(&z, fd, "bill", &err), 0);
	assert_int_equal(read_member(z, buf, sizeof(buf)), 3);
	recon_zip_close(z);
	close(fd);
	recon_buf_release(&b);
}

/* ---- gzip (.gz statements) ---- */

/*
 * One gzip member of data appended to b, written by zlib (another deflate
 * than the reader's); with a header naming the file, a comment, an extra
 * field and the header's own CRC when `full`; level 0: stored blocks.
 */
static void gz_member(struct recon_buf *b, const void *data, size_t len, int level, bool full)
{
	z_stream zs;
	gz_header h;
	size_t cap = len + len / 100 + 1024;
	unsigned char *out = malloc(cap);
	static unsigned char extra[] = {'R', 'C', 3, 0, 'x', 'y', 'z'};

	assert_non_null(out);
	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY),
			 Z_OK);
	if (full) {
		memset(&h, 0, sizeof(h));
		h.name = (Bytef *)"2024-03-01.csv";
		h.comment = (Bytef *)"a comment";
		h.extra = extra;
		h.extra_len = sizeof(extra);
		h.hcrc = 1;
		h.os = 3;
		assert_int_equal(deflateSetHeader(&zs, &h), Z_OK);
	}
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	recon_buf_add(b, out, cap - zs.avail_out);
	deflateEnd(&zs);
	free(out);
}

/* Reads fd as a .gz in reads of odd sizes into out; returns the last read's result. */
static long gz_drain_from(int fd, const struct recon_buf *head, size_t prefix,
			  struct recon_sha256 *sha, char *out, size_t cap, size_t *total,
			  struct recon_err *err)
{
	static const size_t sizes[] = {1, 4093, 65536, 7, 1 << 20};
	struct recon_gz *g = NULL;
	size_t k = 0;
	long n;

	*total = 0;
	recon_err_init(err);
	assert_int_equal(recon_zip_gz_open(&g, fd, "bill.csv.gz", sha, err), 0);
	if (prefix) {
		/* the caller read these already (a pipe's first bytes, to see what it holds) */
		assert_int_equal(lseek(fd, (off_t)prefix, SEEK_SET), (off_t)prefix);
		recon_zip_gz_prefix(g, head->s, prefix);
	}
	for (;;) {
		size_t ask = sizes[k++ % 5];
		if (ask > cap - *total)
			ask = cap - *total;
		assert_true(ask > 0); /* cap: more than the data, so a read past it shows */
		if ((n = recon_zip_gz_read(g, out + *total, ask, err)) <= 0)
			break;
		assert_true((size_t)n <= ask);
		*total += (size_t)n;
	}
	if (n < 0) {
		/* a failure stays one: a read after it never ends as if the stream had */
		struct recon_err again;
		char c;
		recon_err_init(&again);
		assert_int_equal(recon_zip_gz_read(g, &c, 1, &again), n);
	}
	recon_zip_gz_close(g);
	return n;
}

static long gz_drain(int fd, struct recon_sha256 *sha, char *out, size_t cap, size_t *total,
		     struct recon_err *err)
{
	return gz_drain_from(fd, NULL, 0, sha, out, cap, total, err);
}

/* Concatenated members (headers with every optional field, stored, empty) read as one. */
static void test_gz_members_and_headers(void **state)
{
	const size_t len = (size_t)3 << 20;
	const size_t cap = 2 * len + 100064;
	char *body = malloc(len), *out = malloc(cap);
	struct recon_sha256 sha;
	struct recon_err err;
	struct recon_buf b, want;
	char got_hex[65], want_hex[65];
	size_t total;
	int fd;

	(void)state;
	assert_non_null(body);
	assert_non_null(out);
	for (size_t i = 0; i < len; i++)
		body[i] = (char)(i % 37 == 36 ? '\n' : '0' + (i * 7919 % 10));
	recon_buf_init(&b);
	recon_buf_init(&want);
	gz_member(&b, body, len, 6, true); /* name, comment, extra field, header CRC */
	recon_buf_add(&want, body, len);
	gz_member(&b, "", 0, 6, false);		   /* an empty member */
	gz_member(&b, body + 5, 100000, 0, false); /* stored blocks */
	recon_buf_add(&want, body + 5, 100000);
	gz_member(&b, body + 11, len - 11, 9, true);
	recon_buf_add(&want, body + 11, len - 11);
	recon_sha256_hex(b.s, b.len, want_hex);
	fd = file_of(&b);
	recon_sha256_init(&sha);
	assert_int_equal(gz_drain(fd, &sha, out, cap, &total, &err), 0);
	assert_int_equal(total, want.len);
	assert_memory_equal(out, want.s, want.len);
	recon_sha256_final_hex(&sha, got_hex);
	assert_string_equal(got_hex, want_hex);
	close(fd);
	recon_buf_release(&b);
	recon_buf_release(&want);
	free(body);
	free(out);
}

/*
 * A member whose end falls at each place around the reader's fill edge (its
 * fills are 64 KiB), then a member whose header is plain or has every
 * optional field (so that it is split between two fills at each place):
 * each member is read whole, its header too.
 */
static void test_gz_member_end_at_fill_edge(void **state)
{
	static const char tail[] = "ORD20240301000000009,9.00,CNY,SUCCESS\n";
	const size_t len = 200000;
	unsigned char *body = malloc(len), *raw = NULL, *out = malloc(len + 4096);
	size_t nraw;
	uint32_t x = 88172645u;

	(void)state;
	assert_non_null(body);
	assert_non_null(out);
	for (size_t i = 0; i < len; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5; /* barely compressible */
		body[i] = (unsigned char)('a' + x % 26);
	}
	nraw = deflate_raw(body, 70000, &raw); /* a member of about 64 KiB: 52 KiB */
	for (size_t pad = 0; pad < 2 * 70; pad++) {
		const bool full = pad >= 70;
		struct recon_buf b, want;
		struct recon_err err;
		unsigned char h[10] = {0x1f, 0x8b, 8, 4 /* FEXTRA */, 0, 0, 0, 0, 0, 3};
		const uLong crc = crc32(0L, body, 70000);
		size_t total;
		int fd;

		recon_buf_init(&b);
		recon_buf_init(&want);
		recon_buf_add(&b, h, sizeof(h));
		/* an extra field that moves the member's end to 65536 - 60 + pad % 70 */
		const size_t xlen = 65536 - 60 - sizeof(h) - 2 - nraw - 8 + pad % 70;
		put16(&b, (uint32_t)xlen);
		for (size_t i = 0; i < xlen; i++)
			recon_buf_addc(&b, 'x');
		recon_buf_add(&b, raw, nraw);
		put32(&b, (uint32_t)crc);
		put32(&b, 70000);
		recon_buf_add(&want, body, 70000);
		gz_member(&b, tail, sizeof(tail) - 1, 6, full);
		recon_buf_add(&want, tail, sizeof(tail) - 1);
		fd = file_of(&b);
		if (gz_drain(fd, NULL, (char *)out, len + 4096, &total, &err) != 0)
			fail_msg("pad %zu: %s", pad, err.msg);
		assert_int_equal(total, want.len);
		assert_memory_equal(out, want.s, want.len);
		close(fd);
		recon_buf_release(&b);
		recon_buf_release(&want);
	}
	free(raw);
	free(body);
	free(out);
}

/*
 * Read from a pipe, a .gz's first bytes come in apart (the caller reads a
 * few to see what the input is): a header with every optional field, its
 * own CRC among them, split after each of its bytes, is read whole.
 */
static void test_gz_header_split(void **state)
{
	static const char rows[] = "ORD1,1.00,CNY,SUCCESS\nORD2,2.00,CNY,SUCCESS\n";
	struct recon_buf b;
	char out[4096];

	(void)state;
	recon_buf_init(&b);
	gz_member(&b, rows, sizeof(rows) - 1, 6, true);
	gz_member(&b, rows, sizeof(rows) - 1, 0, true);
	for (size_t k = 1; k < 60; k++) {
		struct recon_err err;
		size_t total;
		int fd = file_of(&b);

		if (gz_drain_from(fd, &b, k, NULL, out, sizeof(out), &total, &err) != 0)
			fail_msg("the first %zu bytes apart: %s", k, err.msg);
		assert_int_equal(total, 2 * (sizeof(rows) - 1));
		assert_memory_equal(out, rows, sizeof(rows) - 1);
		assert_memory_equal(out + sizeof(rows) - 1, rows, sizeof(rows) - 1);
		close(fd);
	}
	recon_buf_release(&b);
}

/* A damaged .gz fails with RECON_EINPUT and what is wrong; it never ends as if read whole. */
static void test_gz_damaged(void **state)
{
	static const char line[] = "ORD20240301000000001,100.00,CNY,SUCCESS,2024-03-01 10:00:00\n";
	enum { CUT, CUT_TRAILER, BAD_CRC, BAD_SIZE, BAD_DATA, GARBAGE, NCASES };
	static const char *const want[NCASES] = {
	    "damaged gzip stream: truncated",
	    "damaged gzip stream: truncated",
	    "damaged gzip stream: incorrect CRC-32",
	    "damaged gzip stream: incorrect CRC-32",
	    "damaged gzip stream: ",
	    "damaged gzip stream: not a gzip header",
	};
	struct recon_buf plain, b;
	char *out;
	size_t total;

	(void)state;
	recon_buf_init(&plain);
	for (int i = 0; i < 20000; i++)
		recon_buf_add(&plain, line, sizeof(line) - 1);
	out = malloc(plain.len + 64);
	assert_non_null(out);
	for (int c = 0; c < NCASES; c++) {
		struct recon_err err;
		long n;
		int fd;

		recon_buf_init(&b);
		gz_member(&b, plain.s, plain.len, 6, c == BAD_DATA);
		switch (c) {
		case CUT:
			b.len /= 2;
			break;
		case CUT_TRAILER:
			b.len -= 3;
			break;
		case BAD_CRC:
			b.s[b.len - 8] ^= 1;
			break;
		case BAD_SIZE:
			b.s[b.len - 1] ^= 1;
			break;
		case BAD_DATA:
			/* the first deflate block's header, after a 10-byte header, extra
			   field, name, comment and header CRC: type 3 does not exist */
			b.s[10 + 2 + 7 + 15 + 10 + 2] |= 6;
			break;
		case GARBAGE:
			recon_buf_adds(&b, "not gzip at all");
			break;
		}
		fd = file_of(&b);
		n = gz_drain(fd, NULL, out, plain.len + 64, &total, &err);
		assert_int_equal(n, RECON_EINPUT);
		assert_int_equal(err.code, RECON_EINPUT);
		if (!strstr(err.msg, want[c]))
			fail_msg("case %d: '%s' lacks '%s'", c, err.msg, want[c]);
		assert_string_equal(err.where, "bill.csv.gz");
		close(fd);
		recon_buf_release(&b);
	}
	free(out);
	recon_buf_release(&plain);
}

/* A deflated zip member whose data is damaged fails naming the member; it never ends cleanly. */
static void test_zip_damaged_deflate(void **state)
{
	static const char text[] = "ORD1,1.00,CNY\nORD2,2.00,CNY\nORD3,3.00,CNY\n";
	struct recon_zip *z = NULL;
	struct recon_err err;
	struct recon_buf b;
	char buf[256];
	long n;
	int fd;
	const struct member m[] = {{"bill.csv", text, sizeof(text) - 1, 1, 0}};

	(void)state;
	recon_buf_init(&b);
	zip_build(&b, m, 1, CLASSIC);
	/* the first compressed byte, right after the local header (30 bytes) and its name:
	   its low bits set to a block type that does not exist */
	b.s[30 + strlen("bill.csv")] |= 6;
	fd = file_of(&b);
	recon_err_init(&err);
	assert_int_equal(open_fd(&z, fd, "bill", &err), 0);
	while ((n = recon_zip_read(z, buf, sizeof(buf), &err)) > 0)
		;
	assert_int_equal(n, RECON_EINPUT);
	assert_non_null(strstr(err.msg, "member 'bill.csv': invalid deflate block"));
	/* and again: a failed inflater is not called again, nor does it end cleanly */
	recon_err_init(&err);
	assert_int_equal(recon_zip_read(z, buf, sizeof(buf), &err), RECON_EINPUT);
	assert_non_null(strstr(err.msg, "invalid deflate block"));
	recon_zip_close(z);
	close(fd);
	recon_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_zip_reads_stored_and_deflated),
	    cmocka_unit_test(test_zip_names_escaped_and_matching_listed),
	    cmocka_unit_test(test_zip_inflate_caps),
	    cmocka_unit_test(test_zip_zip64_reads),
	    cmocka_unit_test(test_zip_zip64_caps),
	    cmocka_unit_test(test_zip_zip64_damaged),
	    cmocka_unit_test(test_zip_streams_and_hashes_whole_file),
	    cmocka_unit_test(test_zip_empty_members),
	    cmocka_unit_test(test_zip_file_changes_while_read),
	    cmocka_unit_test(test_zip_fake_locator),
	    cmocka_unit_test(test_zip_damaged_deflate),
	    cmocka_unit_test(test_gz_members_and_headers),
	    cmocka_unit_test(test_gz_member_end_at_fill_edge),
	    cmocka_unit_test(test_gz_header_split),
	    cmocka_unit_test(test_gz_damaged),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
