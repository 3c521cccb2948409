/*
 * recon_compare: the hash join of one window, and the classification of every
 * key the window touches against the key's cumulative view. No I/O.
 *
 * Rows of both sides are added; the compare copies what it keeps of them (the
 * key), so a row's strings need only live for the call. Upstream entries fold into
 * orders by key (DESIGN "Entries fold into orders"); local rows are orders.
 * The open-items ledger (DESIGN "Keys across windows") comes in through
 * recon_compare_carry() (earlier windows' contributions to a key) and
 * recon_compare_item() (a key's open item): a key is evaluated when this
 * window holds an upstream entry of it, its local row's time lies in the
 * window, or it has an open item or an earlier contribution of this very
 * window (a rerun). recon_compare_classify() then decides, for every such
 * key, exactly one class (or awaiting / in flight), and lists the
 * differences in key order (bytewise), so output is deterministic.
 * Memory: compact per-key records (one upstream entry and one local row
 * inline, the key bytes too) and open-addressing tables, for the window,
 * freed by recon_compare_free(). Rows can be fed from two threads at once
 * (one per side, see recon_compare_feeder_new()) with the same result.
 */
#ifndef RECON_COMPARE_H
#define RECON_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "recon_job.h"
#include "recon_mem.h"
#include "recon_normalize.h"
#include "recon_source.h"

enum recon_class {
	RECON_CLASS_MISSING = 0,
	RECON_CLASS_EXTRA,
	RECON_CLASS_STUCK,
	RECON_CLASS_AMOUNT_MISMATCH,
	RECON_CLASS_STATUS_MISMATCH,
	RECON_CLASS_DUPLICATE,
	RECON_CLASS__COUNT,
	RECON_CLASS_MATCHED = RECON_CLASS__COUNT, /* not a difference */
	/* open items that are not (yet) differences */
	RECON_CLASS_AWAITING,  /* local-only key before its settle horizon, or a local refund */
	RECON_CLASS_IN_FLIGHT, /* upstream terminal, local pending, younger than stuck_after */
};

/* "missing", "amount_mismatch", ..., "matched", "awaiting", "in_flight". */
const char *recon_class_name(enum recon_class c);
/* Class for a name, or -1. */
int recon_class_from_name(const char *name);

#define RECON_SIDE_UPSTREAM 0
#define RECON_SIDE_LOCAL    1

/* One side's view of a key, as shown in a difference. */
struct recon_side_view {
	bool present;
	uint8_t status; /* enum recon_status (upstream: folded) */
	char currency[4];
	int64_t amount;	  /* upstream: paid (order amount); local: the row's amount */
	int64_t refunded; /* upstream: sum of refunds */
	int64_t time;	  /* upstream: first entry; local: the row's time */
	uint64_t line;	  /* origin line of that entry/row (0: database) */
	uint32_t rows;	  /* entries (upstream) or rows (local) folded into this view */
	bool looked_up;	  /* found by a key lookup beyond the read window */
	bool carried;	  /* upstream: earlier windows' entries (the ledger) are in the view */
	bool conflict;	  /* upstream: mixed currencies, or a sum beyond int64 */
	bool assumed;	  /* upstream: no payment in the view; the order amount is the local one */
	int64_t last;	  /* upstream: the last entry's time (terminal since) */
};

struct recon_diff {
	const char *key; /* compare arena; RECON_KEY_SEP between composite parts */
	uint32_t key_len;
	uint8_t klass; /* enum recon_class (awaiting and in flight in the pending list) */
	int64_t due;   /* awaiting / in flight: when it becomes a difference; else 0 */
	struct recon_side_view up, local;
};

struct recon_compare_counts {
	uint64_t keys_owned;	/* keys this window evaluated */
	uint64_t rows_owned[2]; /* rows/entries of evaluated keys per side */
	uint64_t rows_other[2]; /* rows read for context but owned by a neighbouring window */
	uint64_t matched;
	uint64_t in_flight;	/* local pending younger than stuck_after, or upstream pending */
	uint64_t awaiting;	/* local keys whose upstream may still come */
	uint64_t carried;	/* evaluated keys whose view holds earlier windows' entries */
	uint64_t keys_rejected; /* keys left unclassified because one of their rows was rejected */
	uint64_t classes[RECON_CLASS__COUNT];
};

struct recon_compare;

/*
 * A compare for one window. `now` decides stuck versus in flight.
 * `upstream_is_statement`: the upstream is the window's statement file, so
 * every entry it lists belongs to this window (DESIGN "Entries belong to
 * windows"); otherwise the caller passes only entries whose time lies in the
 * window. Caller frees with recon_compare_free().
 */
struct recon_compare *recon_compare_new(const struct recon_job *job, const struct recon_window *win,
					int64_t now, bool upstream_is_statement);
/*
 * The ledger's bounds for this evaluation: `history_start`, the start of the
 * job's first reconciled window in this mode (a refund of an order paid
 * before it is judged leniently); `horizon`, the end of the latest reconciled
 * window once this one is (a local-only key is extra once its time plus
 * settle_after lies before it). Before classify; defaults: the window's start
 * and end.
 */
void recon_compare_horizon(struct recon_compare *cmp, int64_t history_start, int64_t horizon);

/* Earlier windows' contributions to one key (the ledger's rows, summed). */
struct recon_carry {
	int64_t paid, refunded;
	uint32_t payments, entries;
	bool revoked, pending, conflict, duplicate;
	bool plain; /* order rows in their status: snapshots, the latest window's wins */
	/* a payment assumed from the local row (assumed_paid): it stands only where the
	   view holds no real payment */
	bool assumed;
	int64_t assumed_paid;
	int64_t window; /* the latest window (start) the rows come from */
	char currency[4];
	int64_t first, last; /* entry times */
	bool mine;	     /* this window contributed to the key before (a rerun): evaluate it */
};
/*
 * Adds a key's carried contributions (once per key), after the rows were
 * added and before the lookups: the key is evaluated with them when the
 * window touches it (or c->mine). Strings borrowed for the call.
 */
void recon_compare_carry(struct recon_compare *cmp, const char *key, size_t len,
			 const struct recon_carry *c);
/*
 * A key with an open item of `klass` (enum recon_class, awaiting and in
 * flight included), opened at `opened` (the opening run's clock): evaluated
 * by this run whatever the window holds. Same timing as recon_compare_carry().
 */
void recon_compare_item(struct recon_compare *cmp, const char *key, size_t len, int klass,
			int64_t opened);

void recon_compare_free(struct recon_compare *cmp);

/*
 * An arena that lives as long as cmp (borrowed), for callers that want one.
 * Rows need not be allocated in it: the compare copies what it keeps.
 */
struct recon_arena *recon_compare_arena(struct recon_compare *cmp);
/*
 * The memory the feeders' builds left unused, for arenas the caller fills
 * after the read (recon_arena_use_donor): such an arena is released before
 * recon_compare_free().
 */
const struct recon_donor *recon_compare_donor(struct recon_compare *cmp);

/*
 * Adds a normalized row of `side` (RECON_SIDE_*). Its strings are borrowed for
 * the call only. Not while feeders are active.
 */
void recon_compare_add(struct recon_compare *cmp, int side, const struct recon_row *row);

/*
 * Notes a rejected row whose key could still be read (row->key set, other
 * fields undefined): that key gets no class in this run, since the truth about
 * it is unknown, and it is not looked up.
 */
void recon_compare_add_rejected(struct recon_compare *cmp, int side, const struct recon_row *row);

/*
 * Speculates that the statement lists no entry twice: entry ids are not
 * checked while rows are added (a probe per entry into a table of every id)
 * but fingerprinted, and recon_compare_ids_distinct() tells afterwards
 * whether the speculation held. When it did not (a duplicate, or two ids
 * sharing a 64-bit fingerprint), the folds are not to be trusted: the caller
 * reads the inputs again into a compare that does not speculate. Before any
 * row is added.
 */
void recon_compare_speculate_ids(struct recon_compare *cmp);
/*
 * After the rows are added: true when no two entries share a fingerprint (or no
 * speculation). The first call frees the fingerprints; later ones repeat its answer.
 */
bool recon_compare_ids_distinct(struct recon_compare *cmp);

/*
 * Sizes the compare for about `keys` keys and `upstream_entries` statement
 * entries (estimates: more rows grow the tables as usual): the number of
 * partitions the feeders stage rows into, the id table or fingerprints.
 * Before any row is added.
 */
void recon_compare_reserve(struct recon_compare *cmp, uint64_t keys, uint64_t upstream_entries);

/*
 * Feeding both sides concurrently. Create one feeder per side (both before
 * either is used; each one created must be ended, or the others wait for it
 * for good), give each to its own thread, which adds that side's rows in
 * read order with recon_compare_feeder_add() (rows borrowed for the call), and
 * ends with recon_compare_feeder_free(): it returns once the other feeder has
 * ended too, every row of both applied (so the caller can then join); the
 * threads ending the feeders apply the rows together, partition by
 * partition, once both sides are read. The
 * result equals adding the upstream rows, then the local ones, with
 * recon_compare_add(). recon_compare_add() and the calls below only after both
 * feeders ended. Caller frees with recon_compare_feeder_free() (NULL-safe).
 */
struct recon_compare_feeder;
struct recon_compare_feeder *recon_compare_feeder_new(struct recon_compare *cmp, int side);
void recon_compare_feeder_add(struct recon_compare_feeder *f, const struct recon_row *row);
/* As recon_compare_add_rejected(), for the feeder's side. */
void recon_compare_feeder_add_rejected(struct recon_compare_feeder *f, const struct recon_row *row);
void recon_compare_feeder_free(struct recon_compare_feeder *f);
/*
 * While a feeder that ended waits for the other (in recon_compare_feeder_free),
 * it calls fn(arg, side) between the memory it faults in ahead for the
 * other: work of the other side's that fn may take (side: the waiting
 * feeder's). fn returns 1 when it did some, 0 when there is none yet (it is
 * asked again within a millisecond), -1 when there will be none (it is not
 * asked again). Before the feeders are created, or once both ended; NULL:
 * no hook.
 */
void recon_compare_on_wait(struct recon_compare *cmp, int (*fn)(void *arg, int side), void *arg);

/*
 * Keys that need a lookup on `side` before they can be asserted:
 * RECON_SIDE_LOCAL: evaluated keys with upstream entries (or an open item)
 * and no local row read (before "missing");
 * RECON_SIDE_UPSTREAM: local-only keys with no upstream entry anywhere that
 * would be "extra".
 * Returns the count; *keys and *lens are arrays in key order (bytewise), valid
 * until the next call (owned by cmp).
 */
size_t recon_compare_pending_lookups(struct recon_compare *cmp, int side, const char ***keys,
				     const uint32_t **lens);

/* What this window's entries contributed to one key, for the ledger. */
struct recon_contrib {
	const char *key; /* borrowed from cmp */
	uint32_t key_len;
	struct recon_carry c; /* this window's entries only (mine unused) */
	int klass;	      /* the key's class now (enum recon_class) */
	bool partial;	      /* cumulative view: partially refunded (kept for ledger.retention) */
	bool carried;	      /* the ledger holds other windows' rows of the key */
	/* 0: this window's entries; else an assumed payment of an earlier day (kept if
	   that day has a row already) */
	int64_t window_start, window_end;
};
/*
 * After classify: calls fn for each evaluated key whose entries in this
 * window a later window needs (DESIGN: refunds, revocations, open items,
 * carried history, local rows beyond the window, replays); a plainly matched
 * payment whose local row lies in the window needs none.
 */
void recon_compare_contributions(struct recon_compare *cmp,
				 void (*fn)(void *arg, const struct recon_contrib *c), void *arg);

/* Classifies every evaluated key; fills counts, the sorted difference list and the pending list. */
void recon_compare_classify(struct recon_compare *cmp);

const struct recon_compare_counts *recon_compare_counts(const struct recon_compare *cmp);
/* Differences in key order (after classify); borrowed from cmp. */
const struct recon_diff *recon_compare_diffs(const struct recon_compare *cmp, size_t *n);
/* Awaiting and in-flight keys in key order (after classify), with their due times; borrowed. */
const struct recon_diff *recon_compare_pending(const struct recon_compare *cmp, size_t *n);
/* Class of a key after classify: RECON_CLASS_* or -1 when the window did not evaluate it. */
int recon_compare_key_class(const struct recon_compare *cmp, const char *key, size_t len);

#endif
