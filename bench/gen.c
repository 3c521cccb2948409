/*
 * bench/gen: deterministic data for the benchmark (bench/run).
 *
 *   gen N DIR [SEED [FORMAT]]
 *
 * Writes, for business day 2024-03-01 (UTC):
 *   DIR/statements/2024-03-01.csv  N upstream entries, one per order (FORMAT
 *       generic, the default):
 *       out_trade_no,transaction_id,amount,currency,status,trade_time (~95 bytes a row)
 *     or the same orders in a provider's real layout (rules/formats/, the
 *     layouts of tests/data/formats/make_fixtures.py), a refunded order as its
 *     payment and a refund entry three minutes later:
 *       wechat  WeChat Pay's 27-column ALL bill: UTF-8 with BOM, CRLF, every cell
 *               behind a backtick, Beijing time, the two-line totals trailer
 *               (~250 bytes a row)
 *       alipay  Alipay's 业务明细: GBK, '#' header and footer lines with the
 *               totals, trailing TABs, negative refunds, Beijing time (~200 bytes)
 *       stripe  a Stripe itemized report: lowercase usd, created_utc, a refund's
 *               negative gross, the order in payment_metadata[order_id], one
 *               description in 50 quoted (it holds a comma) (~150 bytes)
 *   DIR/local.csv                  the local flow of the same orders:
 *       out_trade_no,amount_cents,status,created_at
 *   DIR/expected                   the counts every tool must find, "name value" lines
 * Both files are shuffled independently. Per order, from a hash of (seed, index):
 * 0.5% missing (no local row), 0.2% stuck (local PENDING, same amount), 0.2%
 * amount mismatches (local amount off by 1..100 cents), 3% refunded on both
 * sides, the rest matched; plus 0.5% extra local PAID rows with no upstream entry.
 * Same N and seed: byte-identical files.
 */
#include <iconv.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

enum kind { K_MATCH, K_REFUNDED, K_MISSING, K_STUCK, K_AMOUNT, K_EXTRA };

struct order {
	enum kind kind;
	uint64_t idx;
	int64_t cents;
	unsigned tsec; /* seconds since 2024-03-01 00:00:00 */
};

static uint64_t seed;

static void order_of(uint64_t i, uint64_t n, struct order *o)
{
	uint64_t h = mix64(seed ^ mix64(i));
	unsigned r = (unsigned)(h % 1000);

	o->idx = i;
	if (i >= n)
		o->kind = K_EXTRA;
	else if (r < 5)
		o->kind = K_MISSING;
	else if (r < 7)
		o->kind = K_STUCK;
	else if (r < 9)
		o->kind = K_AMOUNT;
	else if (r < 39)
		o->kind = K_REFUNDED;
	else
		o->kind = K_MATCH;
	o->cents = 100 + (int64_t)((h >> 10) % 999900);
	o->tsec = 1800 + (unsigned)((h >> 32) % 81000); /* 00:30:00 .. 23:00:00 */
}

static void put_time(char *b, unsigned t)
{
	sprintf(b, "2024-03-01 %02u:%02u:%02u", t / 3600, t / 60 % 60, t % 60);
}

/* Beijing time (UTC+8) of t seconds after 2024-03-01 00:00:00 UTC (t < 40 hours). */
static void put_time_cst(char *b, unsigned t)
{
	t += 8 * 3600;
	sprintf(b, "2024-03-%02u %02u:%02u:%02u", 1 + t / 86400, t / 3600 % 24, t / 60 % 60,
		t % 60);
}

enum format { F_GENERIC, F_WECHAT, F_ALIPAY, F_STRIPE };

/* UTF-8 text in GBK (Alipay's bills), for the few fixed strings. */
static const char *gbk(const char *utf8)
{
	static char out[8][4096];
	static int k;
	char *in = (char *)utf8, *o = out[k = (k + 1) % 8];
	size_t il = strlen(utf8), ol = sizeof(out[0]) - 1;
	iconv_t cd = iconv_open("GBK", "UTF-8");

	if (cd == (iconv_t)-1 || iconv(cd, &in, &il, &o, &ol) == (size_t)-1) {
		perror("gen: iconv to GBK");
		exit(1);
	}
	iconv_close(cd);
	*o = '\0';
	return out[k];
}

static void money(char *b, int64_t cents)
{
	sprintf(b, "%s%lld.%02lld", cents < 0 ? "-" : "", (long long)(llabs(cents) / 100),
		(long long)(llabs(cents) % 100));
}

static const char WX_HEAD[] =
    "\xEF\xBB\xBF交易时间,公众账号ID,商户号,特约商户号,设备号,微信订单号,商户订单号,用户标识,"
    "交易类型,交易状态,付款银行,货币种类,应结订单金额,代金券金额,微信退款单号,商户退款单号,"
    "退款金额,充值券退款金额,退款类型,退款状态,商品名称,商户数据包,手续费,费率,订单金额,"
    "申请退款金额,费率备注\r\n";

static const char ALI_HEAD[] =
    "支付宝交易号,商户订单号,业务类型,商品名称,创建时间,完成时间,门店编号,门店名称,操作员,终端号,"
    "对方账户,订单金额（元）,商家实收（元）,支付宝红包（元）,集分宝（元）,支付宝优惠（元）,"
    "商家优惠（元）,券核销金额（元）,券名称,商家红包消费金额（元）,卡消费金额（元）,"
    "退款批次号/请求号,服务费（元）,分润（元）,备注";

/* Alipay's cells in GBK, converted once */
static char ali_pay[16], ali_refund[16], ali_name[64], ali_peer[64], ali_note[64];

/* The statement's sums (the WeChat trailer, the Alipay footer): cents, and fees in 1e-5 yuan. */
struct sums {
	uint64_t rows, pays, refunds;
	int64_t order, refund, fee5;
};

/*
 * One statement entry of order o in format f: refund, the refund entry of a
 * refunded order (k: its number, from 1). t: its time, seconds after midnight UTC.
 */
static void put_entry(FILE *up, enum format f, const struct order *o, uint64_t txn, bool refund,
		      uint64_t k, unsigned ts, struct sums *sum)
{
	char t[32], a[32], fee[32];
	const int64_t c = o->cents;

	sum->rows++;
	switch (f) {
	case F_WECHAT:
		put_time_cst(t, ts);
		money(a, c);
		if (!refund) {
			sprintf(fee, "%lld.%05lld", (long long)(c * 6 / 100000),
				(long long)(c * 6 % 100000));
			sum->order += c;
			sum->fee5 += c * 6;
		} else {
			sum->refund += c;
		}
		fprintf(up,
			"`%s,`wx2421b1c4370ec43b,`10000100,`0,`,`420000202403%016llu,"
			"`ORD20240301%09llu,`oUpF8uMuAJO_M2pxb1Q9zNjWeS6o,`JSAPI,`%s,`CMB_DEBIT,`CNY,"
			"`%s,`0.00,`%s%.0llu,`%s%.0llu,`%s,`0.00,`%s,`%s,`商品,`,`%s,`0.60%%,`%s,`%s,`\r\n",
			t, (unsigned long long)txn, (unsigned long long)o->idx,
			refund ? "REFUND" : "SUCCESS", refund ? "0.00" : a, refund ? "5030000" : "0",
			(unsigned long long)(refund ? 20240301000000000ULL + k : 0),
			refund ? "R" : "0", (unsigned long long)(refund ? k : 0), refund ? a : "0.00",
			refund ? "ORIGINAL" : "", refund ? "SUCCESS" : "", refund ? "0.00000" : fee,
			refund ? "0.00" : a, refund ? a : "0.00");
		break;
	case F_ALIPAY: {
		char created[32];
		put_time_cst(created, o->tsec);
		put_time_cst(t, ts);
		money(a, refund ? -c : c);
		if (refund) {
			sum->refunds++;
			sum->refund -= c;
		} else {
			sum->pays++;
			sum->order += c;
		}
		if (!ali_pay[0]) {
			strcpy(ali_pay, gbk("交易"));
			strcpy(ali_refund, gbk("退款"));
			strcpy(ali_name, gbk("下单测试，蓝色"));
			strcpy(ali_peer, gbk("*津水(602***@qq.com)"));
			strcpy(ali_note, gbk("下单测试"));
		}
		fprintf(up,
			"2024030122001%015llu\t,ORD20240301%09llu\t,%s\t,%s,%s,%s,alipay_store\t,,"
			"\t,\t,%s\t,%s,%s,0.00,0.00,0.00,0.00,,,0.00\t,0.00,%s%.0llu\t,0.00,0.00,%s\r\n",
			(unsigned long long)txn, (unsigned long long)o->idx,
			refund ? ali_refund : ali_pay, ali_name, created, t, ali_peer, a, a,
			refund ? "RF" : "", (unsigned long long)(refund ? k : 0), ali_note);
		break;
	}
	case F_STRIPE: {
		/* 2.9% + 30 cents on a charge, none on a refund */
		const int64_t fc = refund ? 0 : (c * 29 + 500) / 1000 + 30;
		char n[32];
		put_time(t, ts);
		money(a, refund ? -c : c);
		money(fee, fc);
		money(n, (refund ? -c : c) - fc);
		if (refund)
			fprintf(up,
				"txn_r%llu,%s,usd,%s,%s,%s,refund,re_%llu,"
				"REFUND FOR CHARGE (Order ORD20240301%09llu),ch_%llu,"
				"ORD20240301%09llu,usd\r\n",
				(unsigned long long)k, t, a, fee, n, (unsigned long long)k,
				(unsigned long long)o->idx, (unsigned long long)txn,
				(unsigned long long)o->idx);
		else
			fprintf(up,
				"txn_%llu,%s,usd,%s,%s,%s,charge,ch_%llu,%sOrder "
				"ORD20240301%09llu%s,ch_%llu,ORD20240301%09llu,usd\r\n",
				(unsigned long long)txn, t, a, fee, n, (unsigned long long)txn,
				txn % 50 ? "" : "\"", (unsigned long long)o->idx,
				txn % 50 ? "" : ", gift wrap \"\"blue\"\"\"", (unsigned long long)txn,
				(unsigned long long)o->idx);
		break;
	}
	case F_GENERIC:
		break;
	}
}

/* Fisher-Yates over 0..n-1 with its own stream. */
static uint32_t *shuffle(uint64_t n, uint64_t s)
{
	uint32_t *p = malloc(n * sizeof(*p) + 1);

	if (!p) {
		perror("gen");
		exit(1);
	}
	for (uint64_t i = 0; i < n; i++)
		p[i] = (uint32_t)i;
	for (uint64_t i = n; i > 1; i--) {
		uint64_t j = mix64(s ^ mix64(i)) % i;
		uint32_t t = p[i - 1];
		p[i - 1] = p[j];
		p[j] = t;
	}
	return p;
}

static FILE *open_w(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	return f;
}

int main(int argc, char **argv)
{
	uint64_t n, extra, nl = 0, counts[6] = {0}, k = 0;
	uint32_t *perm;
	struct order o;
	struct sums sum = {0};
	char t[32], path[4096], a[32], b[32];
	FILE *up, *loc, *exp;
	enum format f = F_GENERIC;

	if (argc < 3) {
		fprintf(stderr, "usage: gen N DIR [SEED [generic|wechat|alipay|stripe]]\n");
		return 2;
	}
	n = strtoull(argv[1], NULL, 10);
	seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 7;
	if (argc > 4) {
		static const char *const names[] = {"generic", "wechat", "alipay", "stripe"};
		for (f = F_GENERIC; f <= F_STRIPE && strcmp(argv[4], names[f]); f++)
			;
		if (f > F_STRIPE) {
			fprintf(stderr, "gen: unknown format '%s'\n", argv[4]);
			return 2;
		}
	}
	extra = n / 200;
	if (!n || n + extra > UINT32_MAX) {
		fprintf(stderr, "gen: N out of range\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/statements", argv[2]);
	{
		char cmd[4200];
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", path);
		if (system(cmd) != 0)
			return 1;
	}

	up = open_w(argv[2], "statements/2024-03-01.csv");
	if (f == F_GENERIC)
		fputs("out_trade_no,transaction_id,amount,currency,status,trade_time\n", up);
	else if (f == F_WECHAT)
		fputs(WX_HEAD, up);
	else if (f == F_ALIPAY)
		fprintf(up, "%s\r\n%s\r\n%s\r\n%s\r\n%s\r\n", gbk("#支付宝业务明细查询"),
			gbk("#账号：[20880211096256330156]"),
			gbk("#起始日期：[2024年03月01日 00:00:00]   终止日期：[2024年03月02日 00:00:00]"),
			gbk("#-----------------------------------------业务明细列表"
			    "----------------------------------------"),
			gbk(ALI_HEAD));
	else
		fputs("balance_transaction_id,created_utc,currency,gross,fee,net,reporting_category,"
		      "source_id,description,charge_id,payment_metadata[order_id],"
		      "customer_facing_currency\r\n",
		      up);
	perm = shuffle(n, seed * 31 + 1);
	for (uint64_t i = 0; i < n; i++) {
		uint64_t txn;
		order_of(perm[i], n, &o);
		txn = (o.idx * 7919ULL + 1234567ULL) % 10000000000000000ULL;
		if (f == F_GENERIC) {
			put_time(t, o.tsec);
			fprintf(up, "ORD20240301%09llu,420000202403%016llu,%lld.%02lld,CNY,%s,%s\n",
				(unsigned long long)o.idx, (unsigned long long)txn, (long long)(o.cents / 100), (long long)(o.cents % 100),
				o.kind == K_REFUNDED ? "REFUND" : "SUCCESS", t);
			continue;
		}
		put_entry(up, f, &o, txn, false, 0, o.tsec, &sum);
		if (o.kind == K_REFUNDED)
			put_entry(up, f, &o, txn, true, ++k, o.tsec + 180, &sum);
	}
	free(perm);
	if (f == F_WECHAT) {
		money(a, sum.order);
		money(b, sum.refund);
		fprintf(up,
			"总交易单数,应结订单总金额,退款总金额,充值券退款总金额,手续费总金额,订单总金额,"
			"申请退款总金额\r\n`%llu,`%s,`%s,`0.00,`%lld.%05lld,`%s,`%s\r\n",
			(unsigned long long)sum.rows, a, b, (long long)(sum.fee5 / 100000),
			(long long)(sum.fee5 % 100000), a, b);
	} else if (f == F_ALIPAY) {
		money(a, sum.order);
		money(b, sum.refund);
		fprintf(up, "%s\r\n", gbk("#-----------------------------------------业务明细列表结束"
					   "------------------------------------"));
		fprintf(up, "%s%llu%s%s%s0.00%s\r\n", gbk("#交易合计："),
			(unsigned long long)sum.pays, gbk("笔，商家实收共"), a, gbk("元，商家优惠共"),
			gbk("元"));
		fprintf(up, "%s%llu%s%s%s0.00%s\r\n", gbk("#退款合计："),
			(unsigned long long)sum.refunds, gbk("笔，商家实收退款共"), b,
			gbk("元，商家优惠退款共"), gbk("元"));
		fprintf(up, "%s\r\n", gbk("#导出时间：[2024年03月02日 05:46:49]"));
	}

	loc = open_w(argv[2], "local.csv");
	fputs("out_trade_no,amount_cents,status,created_at\n", loc);
	perm = shuffle(n + extra, seed * 31 + 2);
	for (uint64_t i = 0; i < n + extra; i++) {
		int64_t cents;
		const char *st = "PAID";
		unsigned ts;

		order_of(perm[i], n, &o);
		counts[o.kind]++;
		if (o.kind == K_MISSING)
			continue;
		cents = o.cents;
		if (o.kind == K_AMOUNT)
			cents += 1 + (int64_t)(mix64(o.idx ^ 0x55) % 100);
		if (o.kind == K_STUCK)
			st = "PENDING";
		else if (o.kind == K_REFUNDED)
			st = "REFUNDED";
		ts = o.tsec - (unsigned)(mix64(o.idx ^ 0xaa) % 30);
		put_time(t, ts);
		fprintf(loc, "ORD20240301%09llu,%lld,%s,%s\n", (unsigned long long)o.idx,
			(long long)cents, st, t);
		nl++;
	}
	free(perm);

	exp = open_w(argv[2], "expected");
	fprintf(exp, "rows_upstream %llu\nrows_local %llu\n",
		(unsigned long long)(f == F_GENERIC ? n : sum.rows), (unsigned long long)nl);
	fprintf(exp, "missing %llu\nextra %llu\nstuck %llu\namount_mismatch %llu\n",
		(unsigned long long)counts[K_MISSING], (unsigned long long)counts[K_EXTRA],
		(unsigned long long)counts[K_STUCK], (unsigned long long)counts[K_AMOUNT]);
	fprintf(exp, "status_mismatch 0\nduplicate 0\nmatched %llu\n",
		(unsigned long long)(counts[K_MATCH] + counts[K_REFUNDED]));
	if (fclose(up) || fclose(loc) || fclose(exp)) {
		perror("gen: write");
		return 1;
	}
	return 0;
}
