/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_buf.h"
#include "recon_err.h"
#include "recon_job.h"
#include "recon_partition.h"

/* The first 8 hex digits of RFC 1321's test vectors (md5sum agrees). */
static void test_partition_hash_md5(void **state)
{
	static const struct {
		const char *s;
		uint32_t h;
	} v[] = {
	    {"", 0xd41d8cd9},
	    {"a", 0x0cc175b9},
	    {"abc", 0x90015098},
	    {"message digest", 0xf96b697d},
	    {"abcdefghijklmnopqrstuvwxyz", 0xc3fcd3d7},
	    {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 0xd174ab98},
	    {"1234567890123456789012345678901234567890123456789012345678901234567890123456789"
	     "0",
	     0x57edf4a2},
	};
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		assert_int_equal(recon_partition_hash(v[i].s, strlen(v[i].s)), v[i].h);
}

/* 55 and 56 bytes: the padding spills into a second block at 56. */
static void test_partition_hash_padding(void **state)
{
	char k[130];
	(void)state;
	memset(k, 'x', sizeof(k));
	/* printf 'x%.0s' $(seq 55) | md5sum ; ... 56 ; ... 64 ; ... 130 */
	assert_int_equal(recon_partition_hash(k, 55), 0x04364420);
	assert_int_equal(recon_partition_hash(k, 56), 0x668a72d5);
	assert_int_equal(recon_partition_hash(k, 64), 0xc1bb4f81);
	assert_int_equal(recon_partition_hash(k, 130), 0xcfc92f41);
}

static void test_partition_owns(void **state)
{
	struct recon_partition whole = {0, 0}, p;
	unsigned hits[7] = {0};
	char key[32];
	(void)state;
	assert_true(recon_partition_owns(&whole, "x", 1));
	/* every key has exactly one owner among N */
	for (int i = 0; i < 7000; i++) {
		int owners = 0;
		snprintf(key, sizeof(key), "K%06d", i);
		for (uint32_t j = 0; j < 7; j++) {
			p = (struct recon_partition){j, 7};
			if (recon_partition_owns(&p, key, strlen(key))) {
				owners++;
				hits[j]++;
			}
		}
		assert_int_equal(owners, 1);
	}
	for (int j = 0; j < 7; j++)
		assert_true(hits[j] > 800 && hits[j] < 1200);
}

static void test_partition_parse(void **state)
{
	struct recon_partition p;
	struct recon_err err;
	(void)state;
	recon_err_init(&err);
	assert_int_equal(recon_partition_parse("2/4", 0, &p, &err), 0);
	assert_int_equal(p.index, 2);
	assert_int_equal(p.count, 4);
	assert_int_equal(recon_partition_parse("3", 4, &p, &err), 0);
	assert_int_equal(p.index, 3);
	assert_int_equal(p.count, 4);
	const char *bad[] = {"4/4", "1", "x/2", "1/", "/2", "-1/2", "1/0", "0/99999", "1/2/3"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		recon_err_init(&err);
		assert_int_equal(recon_partition_parse(bad[i], 0, &p, &err), RECON_EUSAGE);
	}
	recon_err_init(&err);
	assert_int_equal(recon_partition_parse("1/3", 4, &p, &err), RECON_EUSAGE);
	assert_non_null(strstr(err.msg, "4 partitions"));
}

static void test_partition_path(void **state)
{
	struct recon_partition p = {2, 4}, whole = {0, 0};
	static const char *const v[][2] = {
	    {"state/recon.db", "state/recon.p2-of-4.db"},
	    {"/var/lib/recon/x.prom", "/var/lib/recon/x.p2-of-4.prom"},
	    {"state/recon", "state/recon.p2-of-4"},
	    {"st.ate/recon", "st.ate/recon.p2-of-4"},
	    {"state/.hidden", "state/.hidden.p2-of-4"},
	};
	char *s;
	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		s = recon_partition_path(v[i][0], &p);
		assert_string_equal(s, v[i][1]);
		free(s);
	}
	s = recon_partition_path("a/b.db", &whole);
	assert_string_equal(s, "a/b.db");
	free(s);
}

static void test_partition_sql(void **state)
{
	struct recon_side side;
	struct recon_buf b;
	char k0[] = "order_no", k1[] = "kind";
	(void)state;
	memset(&side, 0, sizeof(side));
	side.nkey = 1;
	side.cols[RECON_COL_KEY0] = k0;
	recon_buf_init(&b);
	recon_partition_sql(&side, RECON_PARTITION_SQL_POSTGRES, &b);
	assert_int_equal(b.len, 0); /* unpartitioned: nothing */
	side.part = (struct recon_partition){1, 3};
	recon_partition_sql(&side, RECON_PARTITION_SQL_POSTGRES, &b);
	assert_non_null(strstr(b.s, "(('x' || left(md5(convert_to(\"order_no\"::text, 'UTF8')), "
				    "8))::bit(32)::bigint % 3 = 1)"));
	assert_non_null(strstr(b.s, "\"order_no\" IS NULL"));
	recon_buf_reset(&b);
	side.nkey = 2;
	side.cols[RECON_COL_KEY0 + 1] = k1;
	recon_partition_sql(&side, RECON_PARTITION_SQL_MYSQL, &b);
	assert_non_null(strstr(
	    b.s, "MD5(CONVERT(CONCAT(CAST(`order_no` AS CHAR), CHAR(31 USING utf8mb4), "
		 "CAST(`kind` AS CHAR)) USING utf8mb4)), 8), 16, 10) AS UNSIGNED) % 3 = 1)"));
	assert_non_null(strstr(b.s, "`kind` IS NULL"));
	recon_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_partition_hash_md5),
	    cmocka_unit_test(test_partition_hash_padding),
	    cmocka_unit_test(test_partition_owns),
	    cmocka_unit_test(test_partition_parse),
	    cmocka_unit_test(test_partition_path),
	    cmocka_unit_test(test_partition_sql),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
