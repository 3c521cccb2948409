/*
 * recon_cfg: reading configuration JSON (job files, format profiles) strictly,
 * with errors that name the file, the line and the key path.
 *
 * Used by recon_job (the job file) and by the source backends' job-section
 * validators (recon_source.h: struct recon_source_backend), so that every
 * key of a job file, whoever reads it, fails the same way: RECON_ECONFIG with
 * where = "file:line: 'upstream.columns.time'" and a message saying what was
 * expected. Readers of an optional key leave *out untouched when it is absent.
 * Every function returns 0 or RECON_ECONFIG (the error recorded in cfg->err).
 */
#ifndef RECON_CFG_H
#define RECON_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "recon_err.h"
#include "recon_job.h"

#define RECON_CFG_DEPTH 6

/*
 * Reader state: the file being read and the key path being validated (for
 * messages). A stack value: set file, text, dir and err; depth starts at 0.
 */
struct recon_cfg {
	const char *file;
	const char *text; /* the file's text, to find the line a key stands on */
	const char *dir;  /* the job's folder: relative paths resolve here */
	const char *path[RECON_CFG_DEPTH];
	int depth;
	struct recon_err *err;
};

/* Records RECON_ECONFIG at the current key path (its line when found); returns it. */
int recon_cfg_err(struct recon_cfg *L, const char *fmt, ...) RECON_PRINTF(2, 3);
/* Enters / leaves key `key` (borrowed until the matching pop). */
void recon_cfg_push(struct recon_cfg *L, const char *key);
void recon_cfg_pop(struct recon_cfg *L);

/* Every key of obj must be in allowed (NULL-terminated): else "unknown key". */
int recon_cfg_keys(struct recon_cfg *L, json_t *obj, const char *const *allowed);
/* A non-empty string without NUL; *out replaced by a fresh copy (caller frees). */
int recon_cfg_str(struct recon_cfg *L, json_t *obj, const char *key, char **out);
/* "description": free text for people; only its type is checked. */
int recon_cfg_description(struct recon_cfg *L, json_t *obj);
int recon_cfg_bool(struct recon_cfg *L, json_t *obj, const char *key, bool *out);
/* A non-negative integer: a JSON integer or a string of digits, never a real. */
int recon_cfg_count(struct recon_cfg *L, json_t *obj, const char *key, int64_t *out);
/* A duration string ("5m") in ms. */
int recon_cfg_duration(struct recon_cfg *L, json_t *obj, const char *key, int64_t *out);
/* A single ASCII character ("\\t" for a tab); "" means none when allow_none. */
int recon_cfg_char(struct recon_cfg *L, json_t *obj, const char *key, bool allow_none, char *out);
/* Array of non-empty strings -> NULL-terminated vector (replaces *out; free with _strv_free). */
int recon_cfg_strv(struct recon_cfg *L, json_t *obj, const char *key, char ***out);
void recon_cfg_strv_free(char **v); /* NULL-safe */

/* {"WORD": "name", ...} with names from `names` (count n) merged into m (values: indexes). */
int recon_cfg_map(struct recon_cfg *L, json_t *obj, const char *key, const char *const *names,
		  int n, struct recon_map *m);
void recon_cfg_map_release(struct recon_map *m);
/* The status names as job files write them, in enum recon_status order. */
extern const char *const recon_cfg_statuses[RECON_ST__COUNT];

/*
 * The keys every side (and a csv format profile) may carry: "columns", the
 * maps, "currency", "timezone", "time_format", "thousands". sql: column names
 * must be SQL identifiers (RECON_SOURCE_TABLE).
 */
int recon_cfg_side_common(struct recon_cfg *L, json_t *obj, struct recon_side *s, bool sql);
/* Role index for a name in "columns" (key parts excluded), or -1. */
int recon_cfg_role(const char *role);

/* dir/p, or p when absolute or dir is "". Caller frees. */
char *recon_cfg_path_join(const char *dir, const char *p);
/* A file's bytes (at most 16 MiB), NUL-terminated; caller frees. NULL with RECON_ECONFIG. */
char *recon_cfg_slurp(const char *path, size_t *len, struct recon_err *err);
/* JSON text parsed strictly (duplicates rejected), an object at the top; caller decrefs. */
json_t *recon_cfg_parse(const char *file, const char *text, size_t len, struct recon_err *err);
/* The folder above the one holding the running binary ("/usr" for /usr/bin/recon), or "". */
void recon_cfg_exe_prefix(char *buf, size_t size);

/* An environment variable's name ([A-Za-z_][A-Za-z0-9_]*, at most 64). */
bool recon_cfg_env_name_ok(const char *s);
/* The error for a value that is no variable name (a DSN pasted there is not echoed). */
int recon_cfg_env_name_err(struct recon_cfg *L, const char *v);

#endif
