/*
 * bigread: drains one database source and prints rows and rate; run under
 * /usr/bin/time -v by tests/db/bigread.sh to show that peak RSS does not
 * grow with the number of rows read (the reader streams).
 *
 *   bigread postgres|mysql TABLE YYYY-MM-DD    (DSN in $BIGREAD_DSN)
 *
 * Columns: out_trade_no, amount, status, created_at (the bigread.sh table).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "recon_err.h"
#include "recon_job.h"
#include "recon_source.h"
#include "recon_time.h"

int main(int argc, char **argv)
{
	struct recon_side side;
	struct recon_window w;
	struct recon_source *src = NULL;
	const struct recon_raw_row *row;
	struct recon_tz *tz = NULL;
	struct recon_err err;
	struct timespec t0, t1;
	unsigned long long n = 0, bytes = 0;
	double dt;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: bigread postgres|mysql TABLE YYYY-MM-DD\n");
		return 2;
	}
	recon_err_init(&err);
	memset(&side, 0, sizeof(side));
	side.role = "local";
	side.backend = recon_source_backend_find(argv[1]);
	side.table = argv[2];
	side.dsn_env = (char *)"BIGREAD_DSN";
	side.nkey = 1;
	side.cols[RECON_COL_KEY0] = (char *)"out_trade_no";
	side.cols[RECON_COL_AMOUNT] = (char *)"amount";
	side.cols[RECON_COL_STATUS] = (char *)"status";
	side.cols[RECON_COL_TIME] = (char *)"created_at";
	if (!side.backend) {
		fprintf(stderr, "bigread: no backend '%s' in this build\n", argv[1]);
		return 2;
	}
	if (recon_tz_load(&tz, "Asia/Shanghai", &err) < 0 ||
	    recon_date_parse(argv[3], &w.day, &err) < 0)
		goto fail;
	side.tz = tz;
	recon_tz_day_bounds(tz, w.day, &w.start, &w.end);
	w.read_start = w.start - 10 * RECON_MS_PER_MIN;
	w.read_end = w.end + 10 * RECON_MS_PER_MIN;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (recon_source_open(&src, &side, &w, &err) < 0)
		goto fail;
	while ((rc = recon_source_next(src, &row, &err)) == RECON_ROW) {
		n++;
		bytes += row->len[RECON_COL_KEY0] + row->len[RECON_COL_AMOUNT];
	}
	if (rc < 0)
		goto fail;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	recon_source_close(src);
	recon_tz_free(tz);
	dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%s: %llu rows (%llu value bytes) in %.2f s: %.0f rows/s\n", argv[1], n, bytes, dt,
	       dt > 0 ? (double)n / dt : 0.0);
	return 0;
fail:
	fprintf(stderr, "bigread: %s: %s\n", err.where, err.msg);
	recon_source_close(src);
	recon_tz_free(tz);
	return 1;
}
