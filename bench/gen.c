/*
 * bench/gen: deterministic data for the benchmark (bench/run).
 *
 *   gen N DIR [SEED]
 *
 * Writes, for business day 2024-03-01 (UTC):
 *   DIR/statements/2024-03-01.csv  N upstream entries, one per order:
 *       out_trade_no,transaction_id,amount,currency,status,trade_time (~95 bytes a row)
 *   DIR/local.csv                  the local flow of the same orders:
 *       out_trade_no,amount_cents,status,created_at
 *   DIR/expected                   the counts every tool must find, "name value" lines
 * Both files are shuffled independently. Per order, from a hash of (seed, index):
 * 0.5% missing (no local row), 0.2% stuck (local PENDING, same amount), 0.2%
 * amount mismatches (local amount off by 1..100 cents), 3% refunded on both
 * sides, the rest matched; plus 0.5% extra local PAID rows with no upstream entry.
 * Same N and seed: byte-identical files.
 */
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
	uint64_t n, extra, nl = 0, counts[6] = {0};
	uint32_t *perm;
	struct order o;
	char t[32], path[4096];
	FILE *up, *loc, *exp;

	if (argc < 3) {
		fprintf(stderr, "usage: gen N DIR [SEED]\n");
		return 2;
	}
	n = strtoull(argv[1], NULL, 10);
	seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 7;
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
	fputs("out_trade_no,transaction_id,amount,currency,status,trade_time\n", up);
	perm = shuffle(n, seed * 31 + 1);
	for (uint64_t i = 0; i < n; i++) {
		order_of(perm[i], n, &o);
		put_time(t, o.tsec);
		fprintf(up, "ORD20240301%09llu,420000202403%016llu,%lld.%02lld,CNY,%s,%s\n",
			(unsigned long long)o.idx,
			(unsigned long long)((o.idx * 7919ULL + 1234567ULL) % 10000000000000000ULL),
			(long long)(o.cents / 100), (long long)(o.cents % 100),
			o.kind == K_REFUNDED ? "REFUND" : "SUCCESS", t);
	}
	free(perm);

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
	fprintf(exp, "rows_upstream %llu\nrows_local %llu\n", (unsigned long long)n,
		(unsigned long long)nl);
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
