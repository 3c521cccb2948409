/*
 * recon_state, tickets: one per (job, key, class), opened by a run's action
 * phase, resolved when its item ends (state_items.c), closed by a person; the
 * ends the merchant's recon_ticket copy has not seen yet are marked unsynced.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <sqlite3.h>

#include "recon_normalize.h"
#include "recon_state.h"
#include "state_int.h"

static const struct recon_state_sql ticket_ins_sql = {
    "INSERT INTO tickets (job, key, class, severity, opened_run, opened_at_ms, last_seen_run, "
    "json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?5, ?7) ON CONFLICT (job, key, class) DO NOTHING",
    "cannot record a ticket", 0};
/* an ended ticket whose difference is back opens again, as of this run */
static const struct recon_state_sql ticket_upd_sql = {
    "UPDATE tickets SET last_seen_run = ?4, opened_run = CASE WHEN status = 'open' THEN "
    "opened_run ELSE ?4 END, opened_at_ms = CASE WHEN status = 'open' THEN opened_at_ms ELSE "
    "?5 END, json = CASE WHEN status = 'open' THEN json ELSE ?6 END, resolved_run = NULL, "
    "resolved_at_ms = NULL, synced = 1, status = 'open' WHERE job = ?1 AND key = ?2 AND "
    "class = ?3 AND status <> 'closed' RETURNING opened_run, opened_run = ?4 AND "
    "opened_at_ms = ?5",
    "cannot record a ticket", 0};

int recon_state_ticket(struct recon_state *st, const char *job, const char *key, const char *klass,
		       const char *severity, int64_t run_id, int64_t now, const char *json,
		       bool *opened, int64_t *opened_run, struct recon_err *err)
{
	sqlite3_stmt *upd;
	int rc;

	*opened = false;
	*opened_run = run_id;
	rc = recon_state_run(st, &ticket_ins_sql,
			     STATE_ARGS(STATE_TEXT(job), STATE_TEXT(key), STATE_TEXT(klass),
					STATE_TEXT(severity), STATE_INT(run_id), STATE_INT(now),
					STATE_TEXT(json)),
			     err);
	if (rc < 0 || sqlite3_changes(st->db) > 0) {
		*opened = rc == 0;
		return rc;
	}
	upd = recon_state_stmt(st, &ticket_upd_sql,
			       STATE_ARGS(STATE_TEXT(job), STATE_TEXT(key), STATE_TEXT(klass),
					  STATE_INT(run_id), STATE_INT(now), STATE_TEXT(json)),
			       err);
	if (!upd)
		return err->code;
	/* no row: a person closed it, and their word stands */
	rc = recon_state_step(st, &ticket_upd_sql, upd, err);
	if (rc == RECON_ROW) {
		*opened_run = sqlite3_column_int64(upd, 0);
		*opened = sqlite3_column_int(upd, 1) != 0;
		rc = recon_state_step(st, &ticket_upd_sql, upd, err);
		if (rc == RECON_ROW)
			rc = recon_state_fail(st, &ticket_upd_sql, err);
	} else if (rc == RECON_DONE) {
		*opened_run = 0;
	}
	recon_state_done(upd);
	return rc < 0 ? rc : 0;
}

static const struct recon_state_sql unsynced_sql = {
    "SELECT key, class, status, note, coalesce(resolved_run, 0), coalesce(resolved_at_ms, 0) "
    "FROM tickets WHERE job = ? AND synced = 0 AND status <> 'open' ORDER BY key, class",
    "cannot read the tickets", 0};

struct unsynced {
	int (*fn)(void *arg, const struct recon_ticket_end *t);
	void *arg;
};

static int unsynced_row(void *arg, sqlite3_stmt *q)
{
	struct unsynced *u = arg;
	struct recon_ticket_end t = {
	    (const char *)sqlite3_column_text(q, 0),
	    (const char *)sqlite3_column_text(q, 1),
	    (const char *)sqlite3_column_text(q, 2),
	    (const char *)sqlite3_column_text(q, 3),
	    sqlite3_column_int64(q, 4),
	    sqlite3_column_int64(q, 5),
	};

	return u->fn(u->arg, &t);
}

int recon_state_tickets_unsynced(struct recon_state *st, const char *job,
				 int (*fn)(void *arg, const struct recon_ticket_end *t), void *arg,
				 struct recon_err *err)
{
	struct unsynced u = {fn, arg};

	return recon_state_each(st, &unsynced_sql, STATE_ARGS(STATE_TEXT(job)), unsynced_row, &u,
				err);
}

static const struct recon_state_sql synced_sql = {
    "UPDATE tickets SET synced = 1 WHERE job = ? AND key = ? AND class = ?",
    "cannot update a ticket", 0};

int recon_state_ticket_synced(struct recon_state *st, const char *job, const char *key,
			      const char *klass, struct recon_err *err)
{
	return recon_state_run(
	    st, &synced_sql, STATE_ARGS(STATE_TEXT(job), STATE_TEXT(key), STATE_TEXT(klass)), err);
}

static const struct recon_state_sql close_sql = {
    "UPDATE tickets SET status = 'closed', resolved_run = NULL, resolved_at_ms = ?4, note = "
    "?5, synced = 0 WHERE job = ?1 AND key = ?2 AND class = ?3 AND status = 'open'",
    "cannot close the ticket", 0};
static const struct recon_state_sql close_items_sql = {
    "SELECT id, key FROM items WHERE job = ? AND class = ? AND state = 'open'",
    "cannot read the items", 0};
static const struct recon_state_sql close_item_sql = {
    "UPDATE items SET state = 'closed', ended_at_ms = ?2, ended_by = 'person', note = ?3 "
    "WHERE id = ?1",
    "cannot close the item", 0};

/* The ticket's items being closed: found by their key as tickets show it. */
struct closing {
	struct recon_state *st;
	const char *key, *note;
	int64_t now;
	struct recon_err *err;
};

static int close_item(void *arg, sqlite3_stmt *q)
{
	struct closing *c = arg;
	char shown[RECON_KEY_PARTS_MAX * 1025 + 8];

	recon_key_display((const char *)sqlite3_column_text(q, 1),
			  (size_t)sqlite3_column_bytes(q, 1), shown, sizeof(shown));
	if (strcmp(shown, c->key))
		return 0;
	return recon_state_run(c->st, &close_item_sql,
			       STATE_ARGS(STATE_INT(sqlite3_column_int64(q, 0)), STATE_INT(c->now),
					  STATE_TEXT(c->note)),
			       c->err);
}

int recon_state_ticket_close(struct recon_state *st, const char *job, const char *key,
			     const char *klass, const char *note, int64_t now,
			     struct recon_err *err)
{
	struct closing c = {st, key, note, now, err};
	int rc;

	if ((rc = recon_state_exec(st, "BEGIN IMMEDIATE", err)) < 0)
		return rc;
	rc = recon_state_run(st, &close_sql,
			     STATE_ARGS(STATE_TEXT(job), STATE_TEXT(key), STATE_TEXT(klass),
					STATE_INT(now), STATE_TEXT(note)),
			     err);
	if (rc == 0 && sqlite3_changes(st->db) == 0)
		rc = recon_err_set(err, RECON_ENOTFOUND, NULL,
				   "no open ticket of job '%s' for key '%s' and class '%s'", job,
				   key, klass);
	/* the items behind it (any mode) */
	if (rc == 0)
		rc = recon_state_each(st, &close_items_sql,
				      STATE_ARGS(STATE_TEXT(job), STATE_TEXT(klass)), close_item,
				      &c, err);
	return recon_state_tx_end(st, rc, err);
}
