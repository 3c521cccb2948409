/*
 * Tests for src/source_csv.c: the CSV statement reader, on files written
 * into a mkdtemp() folder (real statement quirks: WeChat BOM/CRLF/backticks
 * and trailer, Alipay GBK with '#' header/footer and trailing TABs, RFC 4180
 * quoting), malformed records as rejects, and the open errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h> /* after the four above, which it needs */

#include <dirent.h>
#include <errno.h>
#include <iconv.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "recon_err.h"
#include "recon_job.h"
#include "recon_sha256.h"
#include "recon_source.h"
#include "recon_time.h"

struct fixture {
	char dir[64];
	char path[512];
};

static int group_setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	if (!fx)
		return -1;
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/recon_csv_XXXXXX");
	if (!mkdtemp(fx->dir)) {
		free(fx);
		return -1;
	}
	*state = fx;
	return 0;
}

static int group_teardown(void **state)
{
	struct fixture *fx = *state;
	DIR *d = opendir(fx->dir);
	struct dirent *de;
	char p[600];

	while (d && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(p, sizeof(p), "%s/%s", fx->dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(fx->dir);
	free(fx);
	return 0;
}

/* Writes data to <dir>/name; fx->path is the file's path. */
static const char *write_file(struct fixture *fx, const char *name, const void *data, size_t len)
{
	FILE *f;

	snprintf(fx->path, sizeof(fx->path), "%s/%s", fx->dir, name);
	f = fopen(fx->path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return fx->path;
}

static const char *write_str(struct fixture *fx, const char *name, const char *text)
{
	return write_file(fx, name, text, strlen(text));
}

/* The side struct holds `char *`; tests point it at literals they never write through. */
static char *S(const char *s)
{
	return (char *)s;
}

static void side_init(struct recon_side *sd, const char *path)
{
	memset(sd, 0, sizeof(*sd));
	sd->role = "upstream";
	sd->backend = &recon_source_csv;
	sd->path = S(path);
	sd->nkey = 1;
	sd->csv.delimiter = ',';
	sd->csv.quote = '"';
	sd->csv.header = true;
}

static struct recon_window window(void)
{
	struct recon_window w;

	memset(&w, 0, sizeof(w));
	w.day = recon_days_from_civil(2024, 1, 16);
	return w;
}

static struct recon_source *open_ok(const struct recon_side *sd)
{
	struct recon_window w = window();
	struct recon_source *src = NULL;
	struct recon_err err;
	char buf[512];
	int rc;

	recon_err_init(&err);
	rc = recon_source_csv.ops->open(&src, sd, &w, &err);
	if (rc < 0)
		fail_msg("open failed: %s", recon_err_str(&err, buf, sizeof(buf)));
	assert_non_null(src);
	assert_int_equal(err.code, 0);
	return src;
}

static int open_fail(const struct recon_side *sd, struct recon_err *err)
{
	struct recon_window w = window();
	struct recon_source *src = (struct recon_source *)1;
	int rc;

	recon_err_init(err);
	rc = recon_source_csv.ops->open(&src, sd, &w, err);
	assert_true(rc < 0);
	assert_int_equal(rc, err->code);
	assert_null(src);
	return rc;
}

static const struct recon_raw_row *next_row(struct recon_source *src)
{
	const struct recon_raw_row *row = NULL;
	struct recon_err err;
	char buf[512];
	int rc;

	recon_err_init(&err);
	rc = recon_source_csv.ops->next(src, &row, &err);
	if (rc < 0)
		fail_msg("next failed: %s", recon_err_str(&err, buf, sizeof(buf)));
	assert_int_equal(rc, RECON_ROW);
	assert_non_null(row);
	return row;
}

static void expect_done(struct recon_source *src)
{
	const struct recon_raw_row *row = NULL;
	struct recon_err err;

	recon_err_init(&err);
	assert_int_equal(recon_source_csv.ops->next(src, &row, &err), RECON_DONE);
	assert_int_equal(err.code, 0);
	/* and it stays done */
	assert_int_equal(recon_source_csv.ops->next(src, &row, &err), RECON_DONE);
}

static void check_val(const struct recon_raw_row *row, enum recon_col c, const char *want)
{
	if (!want) {
		assert_null(row->val[c]);
		return;
	}
	assert_non_null(row->val[c]);
	if (row->len[c] != strlen(want) || memcmp(row->val[c], want, row->len[c]))
		fail_msg("role %s: got '%.*s', want '%s'", recon_col_name(c), (int)row->len[c],
			 row->val[c], want);
}

static void check_ok(const struct recon_raw_row *row, uint64_t line)
{
	if (row->reject)
		fail_msg("line %llu rejected: %s", (unsigned long long)row->line, row->reject);
	assert_int_equal(row->line, line);
}

static void check_reject(const struct recon_raw_row *row, uint64_t line, const char *reason)
{
	assert_non_null(row->reject);
	assert_string_equal(row->reject, reason);
	assert_int_equal(row->line, line);
}

/* UTF-8 -> GBK bytes into out (NUL-terminated); returns the length. */
static size_t to_gbk(const char *utf8, char *out, size_t size)
{
	iconv_t cd = iconv_open("GBK", "UTF-8");
	char *in = (char *)utf8, *o = out;
	size_t inleft = strlen(utf8), outleft = size - 1;

	assert_true(cd != (iconv_t)-1);
	assert_int_not_equal(iconv(cd, &in, &inleft, &o, &outleft), (size_t)-1);
	iconv_close(cd);
	*o = '\0';
	return (size_t)(o - out);
}

/* ---- tests ---- */

static void test_source_csv_bom(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;

	side_init(&sd, write_str(fx, "bom.csv", "\xEF\xBB\xBFid,amount\n1,2.00\n"));
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	assert_string_equal(src->name, fx->path);
	row = next_row(src);
	check_ok(row, 2);
	check_val(row, RECON_COL_KEY0, "1");
	check_val(row, RECON_COL_AMOUNT, "2.00");
	check_val(row, RECON_COL_STATUS, NULL);
	assert_int_equal(row->raw_len, 6);
	assert_memory_equal(row->raw, "1,2.00", 6);
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_crlf(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;

	side_init(&sd,
		  write_str(fx, "crlf.csv", "id,amount\r\n1,2.00\r\n\"2\",\"3.00\"\r\n3,\r\n"));
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 2);
	check_val(row, RECON_COL_AMOUNT, "2.00");
	row = next_row(src);
	check_ok(row, 3);
	check_val(row, RECON_COL_KEY0, "2");
	check_val(row, RECON_COL_AMOUNT, "3.00");
	row = next_row(src);
	check_ok(row, 4);
	check_val(row, RECON_COL_AMOUNT, "");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_quoted(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;

	side_init(&sd, write_str(fx, "quoted.csv",
				 "id,name,amount\n"
				 "1,\"a, b\",1.00\n"
				 "2,\"say \"\"hi\"\"\",2.00\n"
				 "3,\"multi\nline\r\n\ntext\",3.00\n"
				 "4, x ,4.00\n"
				 "\"5\",,\"\"\n"));
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_STATUS] = S("name");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 2);
	check_val(row, RECON_COL_STATUS, "a, b");
	row = next_row(src);
	check_ok(row, 3);
	check_val(row, RECON_COL_STATUS, "say \"hi\"");
	check_val(row, RECON_COL_AMOUNT, "2.00");
	row = next_row(src);
	check_ok(row, 4);
	check_val(row, RECON_COL_KEY0, "3");
	check_val(row, RECON_COL_STATUS, "multi\nline\r\n\ntext");
	check_val(row, RECON_COL_AMOUNT, "3.00");
	assert_int_equal(row->raw_len, strlen("3,\"multi\nline\n\ntext\",3.00"));
	assert_memory_equal(row->raw, "3,\"multi\nline\n\ntext\",3.00", row->raw_len);
	row = next_row(src);
	check_ok(row, 8);			 /* the record after a 4-line record */
	check_val(row, RECON_COL_STATUS, " x "); /* blanks kept: the normalizer trims */
	row = next_row(src);
	check_ok(row, 9);
	check_val(row, RECON_COL_KEY0, "5");
	check_val(row, RECON_COL_STATUS, "");
	check_val(row, RECON_COL_AMOUNT, "");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

/* A line with quotes (libcsv) and one without (split in place) give the same cells. */
static void test_source_csv_paths_agree(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *a, *b;
	char av[RECON_COL__COUNT][32], bv[RECON_COL__COUNT][32];

	side_init(&sd, write_str(fx, "agree.csv",
				 "k,a,b,c\n"
				 " x ,\t1 ,,\n"
				 "\" x \",\"\t1 \",\"\",\n"));
	sd.cols[RECON_COL_KEY0] = S("k");
	sd.cols[RECON_COL_AMOUNT] = S("a");
	sd.cols[RECON_COL_STATUS] = S("b");
	sd.cols[RECON_COL_CURRENCY] = S("c");
	src = open_ok(&sd);
	a = next_row(src);
	check_ok(a, 2);
	for (int r = 0; r < RECON_COL__COUNT; r++)
		snprintf(av[r], sizeof(av[r]), "%d:%.*s", a->val[r] != NULL, (int)a->len[r],
			 a->val[r] ? a->val[r] : "");
	b = next_row(src);
	check_ok(b, 3);
	for (int r = 0; r < RECON_COL__COUNT; r++) {
		snprintf(bv[r], sizeof(bv[r]), "%d:%.*s", b->val[r] != NULL, (int)b->len[r],
			 b->val[r] ? b->val[r] : "");
		assert_string_equal(av[r], bv[r]);
	}
	check_val(b, RECON_COL_KEY0, " x ");
	check_val(b, RECON_COL_AMOUNT, "\t1 ");
	check_val(b, RECON_COL_CURRENCY, "");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

/* The four columns of the wide-line tests, by header name and by role. */
static const char *const col[4] = {"k", "a", "b", "c"};
static const enum recon_col cols[4] = {RECON_COL_KEY0, RECON_COL_AMOUNT, RECON_COL_STATUS,
				       RECON_COL_CURRENCY};

/* len letters from a seed, and the NUL: a cell of the wide-line tests. */
static void letters(char *cell, size_t len, size_t seed)
{
	for (size_t i = 0; i < len; i++)
		cell[i] = (char)('a' + (seed + i) % 26);
	cell[len] = '\0';
}

/*
 * Plain lines of every length to about 200 bytes, a delimiter on and around
 * each 16- and 64-byte boundary (the splitter's looks), some with UTF-8 or a
 * quote past the first 64 bytes, each followed by the same cells quoted
 * (libcsv's path): every row's cells are the ones written. Run with and
 * without AVX-512 (ctest test_source_csv and test_source_csv_no_avx512).
 */
static void test_source_csv_wide_lines(void **state)
{
	enum { LINES = 150, CELL = 96 };
	struct fixture *fx = *state;
	static char text[LINES * 2 * 4 * (CELL + 4) + 64], cell[LINES][4][CELL];
	struct recon_side sd;
	struct recon_source *src;
	size_t o = 0;

	o += (size_t)snprintf(text, sizeof(text), "k,a,b,c\n");
	for (size_t n = 0; n < LINES; n++) {
		/* cell lengths that put the delimiters everywhere */
		const size_t len[4] = {n % 70, n * 7 % 23, n % 13, n * 13 % 70};
		for (int c = 0; c < 4; c++)
			letters(cell[n][c], len[c], n + (size_t)c);
		if (n % 5 == 1 && len[3] >= 2)
			memcpy(cell[n][3] + len[3] - 2, "\xc3\xa9", 2); /* é, late in the line */
		if (n % 7 == 3 && n % 5 != 1 && len[3] >= 1)
			cell[n][3][len[3] - 1] = '"'; /* a quote: libcsv's path, here unquoted */
		for (int q = 0; q < 2; q++) {
			for (int c = 0; c < 4; c++) {
				const bool quoted = q || strchr(cell[n][c], '"');
				o += (size_t)snprintf(text + o, sizeof(text) - o, "%s%s",
						      c ? "," : "", quoted ? "\"" : "");
				for (const char *p = cell[n][c]; *p; p++) {
					if (*p == '"')
						text[o++] = '"'; /* doubled inside quotes */
					text[o++] = *p;
				}
				o += (size_t)snprintf(text + o, sizeof(text) - o, "%s",
						      quoted ? "\"" : "");
			}
			text[o++] = '\n';
		}
	}
	assert_true(o < sizeof(text));
	side_init(&sd, write_file(fx, "wide.csv", text, o));
	for (int c = 0; c < 4; c++)
		sd.cols[cols[c]] = S(col[c]);
	src = open_ok(&sd);
	for (size_t n = 0; n < LINES; n++) {
		for (int q = 0; q < 2; q++) {
			const struct recon_raw_row *row = next_row(src);
			check_ok(row, (unsigned)(2 + 2 * n + (size_t)q));
			for (int c = 0; c < 4; c++)
				check_val(row, cols[c], cell[n][c]);
		}
	}
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_short_and_long_rows(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;

	side_init(&sd, write_str(fx, "width.csv",
				 "id,amount,status\n"
				 "1,1.00,SUCCESS\n"
				 "2,2.00\n"
				 "3,3.00,SUCCESS,extra\n"
				 "\"4\",\"4.00\"\n"
				 "5,5.00,SUCCESS\n"));
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	sd.cols[RECON_COL_STATUS] = S("status");
	src = open_ok(&sd);
	check_ok(next_row(src), 2);
	row = next_row(src);
	check_reject(row, 3, "expected 3 fields, found 2");
	assert_memory_equal(row->raw, "2,2.00", row->raw_len);
	check_val(row, RECON_COL_KEY0, "2");
	check_val(row, RECON_COL_STATUS, NULL);
	check_reject(next_row(src), 4, "expected 3 fields, found 4");
	check_reject(next_row(src), 5, "expected 3 fields, found 2");
	row = next_row(src);
	check_ok(row, 6);
	check_val(row, RECON_COL_STATUS, "SUCCESS");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_skip_lines(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;

	side_init(&sd, write_str(fx, "skip.csv",
				 "Report: settlements\n"
				 "generated \"today\", by, someone\n"
				 "id,amount\n"
				 "1,2.00\n"));
	sd.csv.skip_lines = 2;
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 4);
	check_val(row, RECON_COL_AMOUNT, "2.00");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_comment_lines(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	char *comments[] = {S("#"), S("//"), NULL};
	const char *text;
	size_t len;

	side_init(&sd, write_str(fx, "comments.csv",
				 "# statement for 2024-01-16\n"
				 "\n"
				 "id,amount\n"
				 "1,2.00\n"
				 "\r\n"
				 "// note: one late row\n"
				 "2,3.00\n"
				 "#end\n"
				 "#total: 5.00\r\n"));
	sd.csv.comment_prefixes = comments;
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 4);
	row = next_row(src);
	check_ok(row, 7);
	check_val(row, RECON_COL_AMOUNT, "3.00");
	expect_done(src);
	text = recon_source_csv_footer(src, &len);
	assert_non_null(text);
	assert_string_equal(text, "// note: one late row\n#end\n#total: 5.00\n");
	assert_int_equal(len, strlen(text));
	assert_null(recon_source_csv_trailer(src, &len, NULL));
	assert_int_equal(len, 0);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_trailer_stop(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	char *stops[] = {S("Total"), S("Summary"), NULL};
	const char *text;
	size_t len;
	uint64_t first = 0;

	side_init(&sd, write_str(fx, "trailer.csv",
				 "id,amount\n"
				 "1,2.00\n"
				 "2,\"Total\nrow\"\n" /* a stop word inside a quoted cell is data */
				 "Total,count\r\n"
				 "2.00,1\r\n"
				 "\n"
				 "3,not data"));
	sd.csv.stop_prefixes = stops;
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	check_ok(next_row(src), 2);
	row = next_row(src);
	check_ok(row, 3);
	check_val(row, RECON_COL_AMOUNT, "Total\nrow");
	expect_done(src);
	text = recon_source_csv_trailer(src, &len, &first);
	assert_non_null(text);
	assert_string_equal(text, "Total,count\n2.00,1\n\n3,not data\n");
	assert_int_equal(len, strlen(text));
	assert_int_equal(first, 5);
	assert_null(recon_source_csv_footer(src, &len));
	recon_source_csv.ops->close(src);
}

static void test_source_csv_missing_column(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_err err;
	char where[600];

	side_init(&sd, write_str(fx, "missing.csv", "junk line\nid,amount\n1,2\n"));
	sd.csv.skip_lines = 1;
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amt");
	assert_int_equal(open_fail(&sd, &err), RECON_EINPUT);
	snprintf(where, sizeof(where), "%s:2", fx->path);
	assert_string_equal(err.where, where);
	assert_string_equal(err.msg, "column 'amt' (role 'amount') not found in header");

	side_init(&sd, write_str(fx, "dup.csv", "id,amount,id\n1,2,3\n"));
	sd.cols[RECON_COL_KEY0] = S("id");
	assert_int_equal(open_fail(&sd, &err), RECON_EINPUT);
	assert_string_equal(err.msg, "column 'id' (role 'key') appears more than once in header");
}

/* Header cells are matched after guard characters and blanks are stripped. */
static void test_source_csv_header_stripped(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;

	side_init(&sd, write_str(fx, "hstrip.csv", " `id\t, amount \n1,2\n"));
	sd.csv.strip = S("`\t");
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	check_val(next_row(src), RECON_COL_AMOUNT, "2");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_wechat(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	char *stops[] = {S("总交易单数"), NULL};
	const char *text;
	size_t len;
	uint64_t first = 0;

	side_init(&sd,
		  write_str(fx, "wechat.csv",
			    "\xEF\xBB\xBF"
			    "交易时间,公众账号ID,商户号,微信订单号,商户订单号,交易状态,"
			    "应结订单金额,退款金额,商户退款单号,商品名称\r\n"
			    "`2024-01-16 10:00:00,`wx2421b1c4370ec43b,`1900000109,"
			    "`4200002086202401160745964084,`ORD001,`SUCCESS,`0.02,`0.00,`0,`T恤\r\n"
			    "`2024-01-16 11:00:00,`wx2421b1c4370ec43b,`1900000109,"
			    "`4200002086202401160745964084,`ORD001,`REFUND,`0.00,`0.01,`R1,`\r\n"
			    "`2024-01-16 12:00:00,`wx2421b1c4370ec43b,`1900000109,"
			    "`4200002086202401160745964085,`ORD\"2,`SUCCESS,`1.00,`0.00,`0,`a,b\r\n"
			    "总交易单数,应结订单总金额,退款总金额\r\n"
			    "`3,`1.02,`0.01\r\n"));
	sd.csv.quote = 0;
	sd.csv.strip = S("`");
	sd.csv.stop_prefixes = stops;
	sd.cols[RECON_COL_TIME] = S("交易时间");
	sd.cols[RECON_COL_TXN_ID] = S("微信订单号");
	sd.cols[RECON_COL_KEY0] = S("商户订单号");
	sd.cols[RECON_COL_STATUS] = S("交易状态");
	sd.cols[RECON_COL_AMOUNT] = S("应结订单金额");
	sd.cols[RECON_COL_REFUND_AMOUNT] = S("退款金额");
	sd.cols[RECON_COL_REFUND_ID] = S("商户退款单号");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 2);
	check_val(row, RECON_COL_TIME, "2024-01-16 10:00:00");
	check_val(row, RECON_COL_TXN_ID, "4200002086202401160745964084");
	check_val(row, RECON_COL_KEY0, "ORD001");
	check_val(row, RECON_COL_AMOUNT, "0.02");
	check_val(row, RECON_COL_REFUND_ID, "0");
	row = next_row(src);
	check_ok(row, 3);
	check_val(row, RECON_COL_STATUS, "REFUND");
	check_val(row, RECON_COL_REFUND_AMOUNT, "0.01");
	check_val(row, RECON_COL_REFUND_ID, "R1");
	/* no quoting: '"' is data; the raw comma in the product name makes a long row */
	row = next_row(src);
	check_reject(row, 4, "expected 10 fields, found 11");
	check_val(row, RECON_COL_KEY0, "ORD\"2");
	expect_done(src);
	text = recon_source_csv_trailer(src, &len, &first);
	assert_string_equal(text, "总交易单数,应结订单总金额,退款总金额\n`3,`1.02,`0.01\n");
	assert_int_equal(first, 5);
	recon_source_csv.ops->close(src);
}

/*
 * Guarded lines (WeChat's ",`" rule) of every length to about 230 bytes, a
 * delimiter, a raw comma and a guard on and around each 64-byte boundary
 * (the AVX-512 splitter's looks: the guard after a delimiter can be the next
 * look's first byte), UTF-8 here and there: every row's cells are the ones
 * written. Then lines with one bad UTF-8 byte at each place: the field named
 * is the one holding it, also past valid UTF-8 in an earlier field.
 */
static void test_source_csv_guarded_wide(void **state)
{
	enum { LINES = 160, CELL = 80, BAD = 140 };
	struct fixture *fx = *state;
	static char text[(LINES + BAD) * 4 * (CELL + 8) + 64], cell[LINES][4][CELL];
	struct recon_side sd;
	struct recon_source *src;
	char *stops[] = {S("total"), NULL};
	size_t o = 0;

	o += (size_t)snprintf(text, sizeof(text), "k,a,b,c\r\n");
	for (size_t n = 0; n < LINES; n++) {
		const size_t len[4] = {n % 75, n * 7 % 29, n % 11, n * 13 % 75};
		for (int c = 0; c < 4; c++) {
			letters(cell[n][c], len[c], n + (size_t)c);
			/* raw commas (no guard after them): data, not delimiters */
			for (size_t i = (n + (size_t)c) % 5; i < len[c]; i += 9)
				cell[n][c][i] = ',';
		}
		if (n % 4 == 1 && len[1] >= 3)
			memcpy(cell[n][1] + len[1] - 3, "\xe6\x9d\xb1", 3); /* 東 */
		if (n % 6 == 2 && len[3] >= 2)
			memcpy(cell[n][3] + len[3] - 2, "\xc3\xa9", 2); /* é, late in the line */
		for (int c = 0; c < 4; c++)
			o += (size_t)snprintf(text + o, sizeof(text) - o, "%s`%s", c ? "," : "",
					      cell[n][c]);
		o += (size_t)snprintf(text + o, sizeof(text) - o, "%s", n % 3 ? "\r\n" : "\n");
	}
	/* one bad byte (a lone 0xC3) in field 1 + b % 4, at every offset to ~200 */
	for (size_t b = 0; b < BAD; b++) {
		const size_t f = b % 4, at = b; /* bytes of field f before the bad one */
		for (size_t c = 0; c < 4; c++) {
			o += (size_t)snprintf(text + o, sizeof(text) - o, "%s`%s", c ? "," : "",
					      c == 0 && f > 0 ? "\xe6\x9d\xb1" : "");
			if (c == f) {
				for (size_t i = 0; i < at; i++)
					text[o++] = (char)('a' + i % 26);
				text[o++] = '\xc3';
				text[o++] = 'x';
			}
		}
		o += (size_t)snprintf(text + o, sizeof(text) - o, "\r\n");
	}
	o += (size_t)snprintf(text + o, sizeof(text) - o, "total,x\r\n`1,`2\r\n");
	assert_true(o < sizeof(text));
	side_init(&sd, write_file(fx, "guarded.csv", text, o));
	sd.csv.quote = 0;
	sd.csv.delim_guard = '`';
	sd.csv.strip = S("`");
	sd.csv.stop_prefixes = stops;
	for (int c = 0; c < 4; c++)
		sd.cols[cols[c]] = S(col[c]);
	src = open_ok(&sd);
	for (size_t n = 0; n < LINES; n++) {
		const struct recon_raw_row *row = next_row(src);
		check_ok(row, (unsigned)(2 + n));
		for (int c = 0; c < 4; c++)
			check_val(row, cols[c], cell[n][c]);
	}
	for (size_t b = 0; b < BAD; b++) {
		char why[64];
		snprintf(why, sizeof(why), "invalid UTF-8 byte 0xC3 at field %zu", 1 + b % 4);
		check_reject(next_row(src), 2 + LINES + b, why);
	}
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_alipay_gbk(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	char *comments[] = {S("#"), NULL};
	char gbk[4096];
	size_t n, len;
	const char *text;
	const char *footer =
	    "#-----------------------------------------业务明细列表结束-----------------------"
	    "-------------\n"
	    "#交易合计：1笔，商家实收共0.01元，商家优惠共0.00元\n"
	    "#退款合计：1笔，商家实收退款共-0.01元，商家优惠退款共0.00元\n"
	    "#导出时间：[2019年09月17日 05:46:49]\n";
	char utf8[4096];

	snprintf(utf8, sizeof(utf8), "%s%s",
		 "#支付宝业务明细查询\n"
		 "#账号：[20880211096256330156]\n"
		 "#起始日期：[2019年09月16日 00:00:00]   终止日期：[2019年09月17日 00:00:00]\n"
		 "#-----------------------------------------业务明细列表---------------------------"
		 "-------------\n"
		 "支付宝交易号,商户订单号,业务类型,商品名称,订单金额（元）,商家实收（元）,"
		 "退款批次号/请求号,备注\n"
		 "2019091622001458860515315453\t,service_1568601259302\t,交易\t,下单测试,0.01,0.01,"
		 "\t,下单测试\n"
		 "2019091622001458860515315453\t,service_1568601259302\t,退款\t,下单测试,-0.01,"
		 "-0.01,2019091622001458860515315453_R1\t,\n",
		 footer);
	n = to_gbk(utf8, gbk, sizeof(gbk));
	assert_true(n < strlen(utf8)); /* really GBK: 2 bytes per Han character */
	side_init(&sd, write_file(fx, "alipay.csv", gbk, n));
	sd.csv.quote = 0;
	sd.csv.encoding = S("GBK");
	sd.csv.strip = S("\t");
	sd.csv.comment_prefixes = comments;
	sd.cols[RECON_COL_TXN_ID] = S("支付宝交易号");
	sd.cols[RECON_COL_KEY0] = S("商户订单号");
	sd.cols[RECON_COL_ENTRY_TYPE] = S("业务类型");
	sd.cols[RECON_COL_AMOUNT] = S("商家实收（元）");
	sd.cols[RECON_COL_REFUND_ID] = S("退款批次号/请求号");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 6);
	check_val(row, RECON_COL_TXN_ID, "2019091622001458860515315453");
	check_val(row, RECON_COL_KEY0, "service_1568601259302");
	check_val(row, RECON_COL_ENTRY_TYPE, "交易");
	check_val(row, RECON_COL_AMOUNT, "0.01");
	check_val(row, RECON_COL_REFUND_ID, "");
	row = next_row(src);
	check_ok(row, 7);
	check_val(row, RECON_COL_ENTRY_TYPE, "退款");
	check_val(row, RECON_COL_AMOUNT, "-0.01");
	check_val(row, RECON_COL_REFUND_ID, "2019091622001458860515315453_R1");
	expect_done(src);
	text = recon_source_csv_footer(src, &len);
	assert_non_null(text);
	assert_string_equal(text, footer);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_invalid_utf8(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	static const char data[] = "id,name,amount\n"
				   "1,caf\xC3,2.00\n"
				   "2,\"caf\xC3\xA9\",\xE2\x82\n"
				   "3,a\0b,4.00\n"
				   "4,\xED\xA0\x80,5.00\n" /* a UTF-16 surrogate */
				   "5,\xC0\xAF,6.00\n"	   /* an overlong '/' */
				   "6,café 東京 😀,7.00\n";

	side_init(&sd, write_file(fx, "utf8.csv", data, sizeof(data) - 1));
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	check_reject(next_row(src), 2, "invalid UTF-8 byte 0xC3 at field 2");
	check_reject(next_row(src), 3, "invalid UTF-8 byte 0xE2 at field 3");
	check_reject(next_row(src), 4, "invalid UTF-8 byte 0x00 at field 2");
	check_reject(next_row(src), 5, "invalid UTF-8 byte 0xED at field 2");
	check_reject(next_row(src), 6, "invalid UTF-8 byte 0xC0 at field 2");
	check_ok(next_row(src), 7);
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_invalid_gbk(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	char gbk[256];
	char data[512];
	static const char bad[] = "1,\x81\x20x\n2,ok\n3,ab\x81\n";
	size_t n;

	n = to_gbk("订单,金额\n", gbk, sizeof(gbk));
	memcpy(data, gbk, n);
	memcpy(data + n, bad, sizeof(bad) - 1);
	n += sizeof(bad) - 1;
	n += to_gbk("4,东京\n", data + n, sizeof(data) - n);
	side_init(&sd, write_file(fx, "badgbk.csv", data, n));
	sd.csv.encoding = S("GBK");
	sd.cols[RECON_COL_KEY0] = S("订单");
	sd.cols[RECON_COL_STATUS] = S("金额");
	src = open_ok(&sd);
	check_reject(next_row(src), 2, "invalid GBK byte sequence at byte 3");
	check_ok(next_row(src), 3);
	row = next_row(src);
	check_reject(row, 4, "invalid GBK byte sequence at byte 5"); /* cut at the line end */
	row = next_row(src);
	check_ok(row, 5);
	check_val(row, RECON_COL_STATUS, "东京");
	expect_done(src);
	recon_source_csv.ops->close(src);

	side_init(&sd, fx->path);
	sd.csv.encoding = S("NO-SUCH-CHARSET");
	sd.cols[RECON_COL_KEY0] = S("订单");
	{
		struct recon_err err;

		assert_int_equal(open_fail(&sd, &err), RECON_ECONFIG);
		assert_string_equal(err.msg, "upstream side: unknown encoding 'NO-SUCH-CHARSET'");
	}
}

static void test_source_csv_big_field(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	size_t big = (size_t)1 << 20, n = 0;
	char *data = malloc(3 * big);

	assert_non_null(data);
	n += (size_t)sprintf(data + n, "id,blob,amount\n1,");
	memset(data + n, 'x', big);
	n += big;
	n += (size_t)sprintf(data + n, ",2.00\n2,\"");
	memset(data + n, 'y', big);
	memcpy(data + n + 1000, "\"\",\n", 4); /* a doubled quote and a newline inside */
	n += big;
	n += (size_t)sprintf(data + n, "\",3.00\n3,z,4.00\n");
	side_init(&sd, write_file(fx, "big.csv", data, n));
	free(data);
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_STATUS] = S("blob");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 2);
	assert_int_equal(row->len[RECON_COL_STATUS], big);
	assert_int_equal(row->raw_len, 1024);
	check_val(row, RECON_COL_AMOUNT, "2.00");
	row = next_row(src);
	check_ok(row, 3);
	assert_int_equal(row->len[RECON_COL_STATUS], big - 1);
	assert_memory_equal(row->val[RECON_COL_STATUS] + 1000, "\",\n", 3);
	check_val(row, RECON_COL_AMOUNT, "3.00");
	check_ok(next_row(src), 5);
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_overlong_record(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	size_t big = ((size_t)17 << 20), n = 0;
	char *data = malloc(big + 256);

	assert_non_null(data);
	n += (size_t)sprintf(data + n, "id,blob\n1,a\n2,");
	memset(data + n, 'x', big);
	n += big;
	n += (size_t)sprintf(data + n, "\n3,b\n");
	side_init(&sd, write_file(fx, "overlong.csv", data, n));
	free(data);
	sd.cols[RECON_COL_KEY0] = S("id");
	src = open_ok(&sd);
	check_ok(next_row(src), 2);
	row = next_row(src);
	check_reject(row, 3, "record longer than 16777216 bytes");
	assert_int_equal(row->raw_len, 1024);
	assert_memory_equal(row->raw, "2,xxx", 5);
	row = next_row(src);
	check_ok(row, 4);
	check_val(row, RECON_COL_KEY0, "3");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

/* Helps a source's lane (recon_source_csv_lane) until told to stop, as recon_run's other reader. */
struct lane_helper {
	struct recon_sha_lane *lane;
	atomic_bool stop;
};

static void *lane_help_loop(void *arg)
{
	struct lane_helper *h = arg;

	/* slow, so that the queue is often full: the reader's buffers still queued when it
	   comes round to them */
	while (!atomic_load(&h->stop)) {
		const struct timespec pause = {0, 20000000};
		(void)recon_sha_lane_help(h->lane);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/*
 * A file read while another thread hashes it: the reader queues its reads
 * where they lie, in a ring of buffers it writes again only once hashed.
 * Rows of every length on both sides of the buffers' ends, a 3 MiB field
 * (a buffer grows), a record past CSV_MAX_RECORD (the buffer is read into
 * from its start again): every row comes back whole and in order, and the
 * digest is the file's.
 */
static void test_source_csv_lane_helped(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	const size_t nrows = 150000, big = (size_t)3 << 20, overlong = (size_t)17 << 20;
	char *data = malloc(2 * nrows * 64 + big + overlong + 256), want[65], got[65], key[32];
	struct lane_helper h;
	struct recon_err err;
	const char *path;
	pthread_t th;
	size_t n = 0;
	uint64_t line = 1;

	assert_non_null(data);
	n += (size_t)sprintf(data + n, "id,blob\n");
	for (size_t i = 0; i < 2 * nrows; i++) {
		if (i == nrows / 2) { /* a field of 3 MiB */
			n += (size_t)sprintf(data + n, "big,");
			memset(data + n, 'b', big);
			n += big;
			data[n++] = '\n';
		} else if (i == nrows) { /* a record too long to keep */
			n += (size_t)sprintf(data + n, "long,");
			memset(data + n, 'l', overlong);
			n += overlong;
			data[n++] = '\n';
		}
		n += (size_t)sprintf(data + n, "%zu,%.*s\n", i, (int)(i * 7919 % 53),
				     "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0");
	}
	path = write_file(fx, "lane.csv", data, n);
	free(data);
	recon_err_init(&err);
	assert_int_equal(recon_sha256_file(path, want, &err), 0);
	side_init(&sd, path);
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_STATUS] = S("blob");
	src = open_ok(&sd);
	h.lane = recon_source_csv_lane(src);
	assert_non_null(h.lane);
	atomic_init(&h.stop, false);
	assert_int_equal(pthread_create(&th, NULL, lane_help_loop, &h), 0);
	for (size_t i = 0; i < 2 * nrows; i++) {
		if (i == nrows / 2) {
			row = next_row(src);
			check_ok(row, ++line);
			assert_int_equal(row->len[RECON_COL_STATUS], big);
		} else if (i == nrows) {
			row = next_row(src);
			check_reject(row, ++line, "record longer than 16777216 bytes");
		}
		row = next_row(src);
		check_ok(row, ++line);
		snprintf(key, sizeof(key), "%zu", i);
		check_val(row, RECON_COL_KEY0, key);
		assert_int_equal(row->len[RECON_COL_STATUS], i * 7919 % 53);
	}
	expect_done(src);
	atomic_store(&h.stop, true);
	pthread_join(th, NULL);
	assert_int_equal(recon_source_csv_sha256(src, got), 0);
	assert_string_equal(got, want);
	recon_source_csv.ops->close(src);
}

/* recon_sha_lane_help() as fast as it goes (lane_help_loop(): slowly). */
static void *fast_help_loop(void *arg)
{
	struct lane_helper *h = arg;

	while (!atomic_load(&h->stop))
		(void)recon_sha_lane_help(h->lane);
	return NULL;
}

/*
 * Reads sd's file to its end while loop helps its lane on another thread
 * (rows is how many it must give): the digest must be the file's.
 */
static void read_helped(struct recon_side *sd, void *(*loop)(void *), size_t rows)
{
	struct recon_source *src;
	const struct recon_raw_row *row;
	struct lane_helper h;
	struct recon_err err;
	char want[65], got[65];
	pthread_t th;
	size_t n = 0;
	int rc;

	recon_err_init(&err);
	assert_int_equal(recon_sha256_file(sd->path, want, &err), 0);
	src = open_ok(sd);
	h.lane = recon_source_csv_lane(src);
	assert_non_null(h.lane);
	atomic_init(&h.stop, false);
	assert_int_equal(pthread_create(&th, NULL, loop, &h), 0);
	while ((rc = recon_source_csv.ops->next(src, &row, &err)) == RECON_ROW)
		n++;
	atomic_store(&h.stop, true);
	pthread_join(th, NULL);
	assert_int_equal(rc, RECON_DONE);
	assert_int_equal(n, rows);
	assert_int_equal(recon_source_csv_sha256(src, got), 0);
	if (strcmp(got, want))
		fail_msg("%s: digest %s, the file's %s", sd->path, got, want);
	recon_source_csv.ops->close(src);
}

/*
 * A stop line whose trailer fills CSV_KEEP_MAX exactly, then 12 MiB more: the
 * rest only goes through the hash (finish_input()), read while a slow helper
 * hashes the lane's queue. The digest is the file's: the rest is not read
 * over bytes still queued (it was, at offset 0 of the ring's buffer, until
 * finish_input() let fill() choose where to read).
 */
static void test_source_csv_lane_trailer_rest(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	char *stops[] = {S("Total"), NULL};
	const size_t nrows = 20000, tail = (size_t)12 << 20;
	char *data = malloc(nrows * 32 + ((size_t)1 << 20) + tail + 256);
	size_t n = 0;

	assert_non_null(data);
	n += (size_t)sprintf(data + n, "id,blob\n");
	for (size_t i = 0; i < nrows; i++)
		n += (size_t)sprintf(data + n, "%zu,x\n", i);
	/* the trailer: 1024 lines of 1023 bytes and a '\n' each, 1 MiB exactly */
	for (size_t i = 0; i < 1024; i++) {
		memcpy(data + n, "Total", 5);
		memset(data + n + 5, 'a' + (int)(i % 26), 1018);
		n += 1023;
		data[n++] = '\n';
	}
	/* then the rest of the file, which only goes through the hash */
	for (size_t i = 0; i < tail; i++)
		data[n++] = (char)('A' + (i * 7 + i / 4096) % 26);
	side_init(&sd, write_file(fx, "lane_trailer.csv", data, n));
	free(data);
	sd.csv.stop_prefixes = stops;
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_STATUS] = S("blob");
	read_helped(&sd, lane_help_loop, nrows);
}

/* Files around the read size's multiples, 0 bytes to 11.5 MiB, helped slowly and quickly. */
static void test_source_csv_lane_sizes(void **state)
{
	struct fixture *fx = *state;
	const size_t B = (size_t)512 << 10;
	const size_t sizes[] = {0,	   8,	       9,	  B - 1,     B,
				B + 1,	   2 * B - 1,  2 * B,	  2 * B + 1, 8 * B,
				8 * B + 7, 16 * B - 3, 23 * B + 5};

	for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		const size_t total = sizes[z];
		char *data = malloc(total + 64);
		struct recon_side sd;
		size_t n = 0, rows = 0;

		assert_non_null(data);
		if (total >= 8) {
			/* a header, then rows; the last one cut short at the size */
			n += (size_t)sprintf(data, "id,blob\n");
			for (size_t i = 0; n < total; i++, rows++) {
				char line[64];
				size_t k =
				    (size_t)sprintf(line, "%zu,%.*s\n", i, (int)(i * 7919 % 41),
						    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP");
				k = k < total - n ? k : total - n;
				memcpy(data + n, line, k);
				n += k;
			}
		} else {
			memset(data, 'x', total); /* a header alone, or nothing */
			n = total;
		}
		side_init(&sd, write_file(fx, "lane_sizes.csv", data, n));
		free(data);
		sd.csv.allow_empty = true;
		sd.cols[RECON_COL_KEY0] = S("id");
		sd.cols[RECON_COL_STATUS] = S("blob");
		for (int fast = 0; fast < 2; fast++)
			read_helped(&sd, fast ? fast_help_loop : lane_help_loop, rows);
	}
}

static void test_source_csv_bad_quotes(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;

	side_init(&sd, write_str(fx, "badquote.csv",
				 "id,name\n"
				 "1,\"ab\"c\n"
				 "2,ab\"c\n"
				 "3,ok\n"
				 "4,\"spans\nlines\"x\n" /* bad on its 2nd line: resync after it */
				 "5,ok\n"
				 "6,\"never closed\n"
				 "7,swallowed\n"));
	sd.cols[RECON_COL_KEY0] = S("id");
	src = open_ok(&sd);
	check_reject(next_row(src), 2, "misplaced quote character in field 2");
	check_reject(next_row(src), 3, "misplaced quote character in field 2");
	check_ok(next_row(src), 4);
	row = next_row(src);
	check_reject(row, 5, "misplaced quote character in field 2");
	assert_memory_equal(row->raw, "4,\"spans\nlines\"x", row->raw_len);
	check_ok(next_row(src), 7);
	row = next_row(src);
	check_reject(row, 8, "unterminated quoted field");
	assert_memory_equal(row->raw, "6,\"never closed\n7,swallowed", row->raw_len);
	expect_done(src);
	recon_source_csv.ops->close(src);
}

/*
 * A file without entries (issue 12 #4): bad input naming the file, since a
 * statement not yet (fully) published must not close the day; with
 * allow_empty it is an input of no rows.
 */
static void expect_empty(struct recon_source *src, const char *what)
{
	const struct recon_raw_row *row = NULL;
	struct recon_err err;

	recon_err_init(&err);
	assert_int_equal(recon_source_csv.ops->next(src, &row, &err), RECON_EINPUT);
	if (!strstr(err.msg, what) || !strstr(err.msg, "no entries") ||
	    !strstr(err.msg, "\"allow_empty\": true"))
		fail_msg("unexpected message: %s: %s", err.where, err.msg);
	assert_non_null(strstr(err.where, ".csv:"));
}

static void test_source_csv_empty_file(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;

	side_init(&sd, write_str(fx, "empty.csv", ""));
	sd.cols[RECON_COL_KEY0] = S("id");
	src = open_ok(&sd);
	expect_empty(src, "empty file");
	recon_source_csv.ops->close(src);
	sd.csv.allow_empty = true;
	src = open_ok(&sd);
	expect_done(src);
	recon_source_csv.ops->close(src);

	sd.csv.header = false;
	sd.csv.allow_empty = false;
	sd.cols[RECON_COL_KEY0] = S("1");
	src = open_ok(&sd);
	expect_empty(src, "empty file");
	recon_source_csv.ops->close(src);
	sd.csv.allow_empty = true;
	src = open_ok(&sd);
	expect_done(src);
	recon_source_csv.ops->close(src);

	/* only a BOM and blank lines */
	side_init(&sd, write_str(fx, "blank.csv", "\xEF\xBB\xBF\r\n\n"));
	sd.cols[RECON_COL_KEY0] = S("id");
	src = open_ok(&sd);
	expect_empty(src, "no entries");
	recon_source_csv.ops->close(src);
	sd.csv.allow_empty = true;
	src = open_ok(&sd);
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_header_only(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;

	side_init(&sd, write_str(fx, "hdr.csv", "id,amount\r\n"));
	sd.cols[RECON_COL_KEY0] = S("id");
	src = open_ok(&sd);
	expect_empty(src, "no records");
	recon_source_csv.ops->close(src);
	sd.csv.allow_empty = true;
	src = open_ok(&sd);
	expect_done(src);
	recon_source_csv.ops->close(src);

	side_init(&sd, write_str(fx, "hdr2.csv", "id,amount"));
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.csv.allow_empty = true;
	src = open_ok(&sd);
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_no_trailing_newline(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;

	side_init(&sd, write_str(fx, "nonl.csv", "id,amount\n1,2.00\n2,3.00"));
	sd.cols[RECON_COL_KEY0] = S("id");
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	check_ok(next_row(src), 2);
	row = next_row(src);
	check_ok(row, 3);
	check_val(row, RECON_COL_AMOUNT, "3.00");
	expect_done(src);
	recon_source_csv.ops->close(src);

	side_init(&sd, write_str(fx, "nonl2.csv", "id,amount\n1,\"2.00\""));
	sd.cols[RECON_COL_AMOUNT] = S("amount");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 2);
	check_val(row, RECON_COL_AMOUNT, "2.00");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

static void test_source_csv_positional(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	const struct recon_raw_row *row;
	struct recon_err err;

	side_init(&sd, write_str(fx, "pos.csv", "A1;x;1.00\nA2;y;2.00\nA3;z\nA4;w;4.00;extra\n"));
	sd.csv.header = false;
	sd.csv.delimiter = ';';
	sd.cols[RECON_COL_KEY0] = S("1");
	sd.cols[RECON_COL_AMOUNT] = S("3");
	src = open_ok(&sd);
	row = next_row(src);
	check_ok(row, 1);
	check_val(row, RECON_COL_KEY0, "A1");
	check_val(row, RECON_COL_AMOUNT, "1.00");
	check_ok(next_row(src), 2);
	check_reject(next_row(src), 3, "expected at least 3 fields, found 2");
	check_reject(next_row(src), 4, "expected 3 fields, found 4");
	expect_done(src);
	recon_source_csv.ops->close(src);

	sd.cols[RECON_COL_AMOUNT] = S("amount");
	assert_int_equal(open_fail(&sd, &err), RECON_ECONFIG);
	assert_non_null(strstr(err.msg, "column 'amount' (role 'amount') is not a position"));
}

static void test_source_csv_missing_file(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_err err;
	char path[600], want[700];

	snprintf(path, sizeof(path), "%s/bill_{yyyymmdd}.csv", fx->dir);
	side_init(&sd, path);
	sd.cols[RECON_COL_KEY0] = S("id");
	assert_int_equal(open_fail(&sd, &err), RECON_EUNAVAIL);
	snprintf(want, sizeof(want),
		 "cannot open '%s/bill_20240116.csv': No such file or directory", fx->dir);
	assert_string_equal(err.msg, want);
	assert_int_equal(recon_err_exit_code(err.code), 69);
	/* a hot window (shorter than a day) says what hot mode needs */
	{
		struct recon_window w = window();
		struct recon_source *src = NULL;

		w.start = 1705363200000LL; /* 2024-01-16T00:00:00Z */
		w.end = w.start + 5 * 60000;
		recon_err_init(&err);
		assert_int_equal(recon_source_csv.ops->open(&src, &sd, &w, &err), RECON_EUNAVAIL);
		assert_null(src);
		assert_non_null(strstr(err.msg, "hot mode reads its window every few minutes"));
	}
}

static void test_source_csv_date_path(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	char path[600];

	write_str(fx, "bill_2024-01-16.csv", "id\n7\n");
	snprintf(path, sizeof(path), "%s/bill_{date}.csv", fx->dir);
	side_init(&sd, path);
	sd.cols[RECON_COL_KEY0] = S("id");
	src = open_ok(&sd);
	assert_string_equal(src->name, fx->path);
	check_val(next_row(src), RECON_COL_KEY0, "7");
	expect_done(src);
	recon_source_csv.ops->close(src);
}

/* A binary file: the header cannot name the columns; no crash, a clear error. */
static void test_source_csv_binary_file(void **state)
{
	struct fixture *fx = *state;
	struct recon_side sd;
	struct recon_source *src;
	struct recon_err err;
	static const char data[] = "\x7F"
				   "ELF\x02\x01\x01\0\0\0\0\0\"\0\0\n\0\x01,\xFF\xFE\n\0";

	side_init(&sd, write_file(fx, "bin.csv", data, sizeof(data) - 1));
	sd.cols[RECON_COL_KEY0] = S("id");
	assert_int_equal(open_fail(&sd, &err), RECON_EINPUT);
	assert_string_equal(err.msg, "column 'id' (role 'key') not found in header");

	/* header=false: every record is a reject, none crashes */
	sd.csv.header = false;
	sd.cols[RECON_COL_KEY0] = S("1");
	src = open_ok(&sd);
	assert_non_null(next_row(src)->reject);
	recon_source_csv.ops->close(src);
	recon_source_csv.ops->close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_source_csv_bom),
	    cmocka_unit_test(test_source_csv_crlf),
	    cmocka_unit_test(test_source_csv_quoted),
	    cmocka_unit_test(test_source_csv_paths_agree),
	    cmocka_unit_test(test_source_csv_wide_lines),
	    cmocka_unit_test(test_source_csv_short_and_long_rows),
	    cmocka_unit_test(test_source_csv_skip_lines),
	    cmocka_unit_test(test_source_csv_comment_lines),
	    cmocka_unit_test(test_source_csv_trailer_stop),
	    cmocka_unit_test(test_source_csv_missing_column),
	    cmocka_unit_test(test_source_csv_header_stripped),
	    cmocka_unit_test(test_source_csv_wechat),
	    cmocka_unit_test(test_source_csv_guarded_wide),
	    cmocka_unit_test(test_source_csv_alipay_gbk),
	    cmocka_unit_test(test_source_csv_invalid_utf8),
	    cmocka_unit_test(test_source_csv_invalid_gbk),
	    cmocka_unit_test(test_source_csv_big_field),
	    cmocka_unit_test(test_source_csv_overlong_record),
	    cmocka_unit_test(test_source_csv_lane_helped),
	    cmocka_unit_test(test_source_csv_lane_trailer_rest),
	    cmocka_unit_test(test_source_csv_lane_sizes),
	    cmocka_unit_test(test_source_csv_bad_quotes),
	    cmocka_unit_test(test_source_csv_empty_file),
	    cmocka_unit_test(test_source_csv_header_only),
	    cmocka_unit_test(test_source_csv_no_trailing_newline),
	    cmocka_unit_test(test_source_csv_positional),
	    cmocka_unit_test(test_source_csv_missing_file),
	    cmocka_unit_test(test_source_csv_date_path),
	    cmocka_unit_test(test_source_csv_binary_file),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
