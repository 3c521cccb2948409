/*
 * recon_heartbeat: the Prometheus text-format file monitoring alerts on
 * (node_exporter textfile collector convention).
 *
 * The file describes every mode of the job (hot and t1 share it), built from
 * the state store. Every series is labelled recon_job (a scrape renames a
 * `job` label) and mode. Differences are counters over successful non-dry
 * runs (they only grow) and gauges of the items still open, so alerts never
 * depend on the last window. The file is replaced atomically: written to a
 * temporary file in the same folder (mode 0644: node_exporter reads it),
 * fsync'd, then renamed over the old one, so a scraper never reads half a
 * file. Values derived from integer milliseconds are printed with integer
 * arithmetic (no floating point).
 */
#ifndef RECON_HEARTBEAT_H
#define RECON_HEARTBEAT_H

#include "recon_err.h"

struct recon_partition;
struct recon_state;

/* Rewrites `path` for job from the state store. RECON_EIO on failure. */
RECON_MUSTCHECK int recon_heartbeat_write(struct recon_state *st, const char *job, const char *path,
					  struct recon_err *err);
/*
 * As recon_heartbeat_write, for key-hash partition p of the job: every series
 * carries the labels partition="I" and partitions="N" first (the files of a
 * job's partitions never collide), and recon_partitions{...} N says how many
 * files the job's alerts expect. Unpartitioned (count 0): the plain file.
 */
RECON_MUSTCHECK int recon_heartbeat_write_partition(struct recon_state *st, const char *job,
						    const struct recon_partition *p,
						    const char *path, struct recon_err *err);

#endif
