#include "recon_compare.h"

#include <stdlib.h>
#include <string.h>

static const char *const class_names[] = {
    "missing", "extra", "stuck", "amount_mismatch", "status_mismatch", "duplicate", "matched",
};

const char *recon_class_name(enum recon_class c)
{
	return (unsigned)c <= RECON_CLASS_MATCHED ? class_names[c] : "?";
}

int recon_class_from_name(const char *name)
{
	for (int i = 0; i <= RECON_CLASS_MATCHED; i++)
		if (!strcmp(name, class_names[i]))
			return i;
	return -1;
}

/* Everything known about one key. Lives in the arena. */
struct keyent {
	const char *key;
	uint32_t key_len;
	uint32_t hash;
	/* upstream fold */
	uint32_t n_up;	    /* entries */
	uint32_t n_payment; /* payment entries (plain success/refunded rows count too) */
	int64_t paid;
	int64_t refunded;
	int64_t other;	  /* plain closed/pending rows and lone revocations: no payment entry */
	int64_t up_first; /* first entry time */
	uint64_t up_line;
	char up_currency[4];
	bool up_currency_conflict;
	bool up_revoked; /* revoke entry, or plain closed row */
	bool up_pending; /* plain pending row */
	bool up_dup;	 /* the same provider entry listed twice */
	bool up_looked_up;
	/* local rows: the first one is kept, more are duplicates */
	uint32_t n_local;
	struct recon_row local;
	bool rejected[2]; /* a row of this key on that side could not be read */
	int8_t klass;	  /* -1: not owned, or not classifiable (a row was rejected) */
};

/* Identity of one statement entry, for duplicates. */
struct ident {
	uint64_t hash;
	const char *id; /* entry id, or NULL: then (key, amount, time) identify it */
	uint32_t len;
	uint8_t entry;
	int64_t amount;
	int64_t time;
	const struct keyent *k;
};

struct table {
	void **slot;
	size_t cap; /* power of two */
	size_t n;
};

struct recon_compare {
	const struct recon_job *job;
	struct recon_window win;
	int64_t now;
	bool upstream_is_statement;
	struct recon_arena arena;
	struct table keys;     /* struct keyent * */
	struct table idents;   /* struct ident * */
	struct keyent **order; /* every keyent, insertion order */
	size_t norder, aorder;
	const char **pend_keys;
	uint32_t *pend_lens;
	size_t apend;
	struct recon_diff *diffs;
	size_t ndiffs;
	struct recon_compare_counts counts;
};

/* FNV-1a 64, folded; good enough for keys and cheap. */
static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const unsigned char *s = p;

	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

#define FNV_BASIS 0xcbf29ce484222325ULL

static void table_init(struct table *t)
{
	t->cap = 1024;
	t->n = 0;
	t->slot = recon_xcalloc(t->cap, sizeof(*t->slot));
}

struct recon_compare *recon_compare_new(const struct recon_job *job, const struct recon_window *win,
					int64_t now, bool upstream_is_statement)
{
	struct recon_compare *cmp = recon_xcalloc(1, sizeof(*cmp));

	cmp->job = job;
	cmp->win = *win;
	cmp->now = now;
	cmp->upstream_is_statement = upstream_is_statement;
	recon_arena_init(&cmp->arena);
	table_init(&cmp->keys);
	table_init(&cmp->idents);
	return cmp;
}

void recon_compare_free(struct recon_compare *cmp)
{
	if (!cmp)
		return;
	recon_arena_release(&cmp->arena);
	free(cmp->keys.slot);
	free(cmp->idents.slot);
	free(cmp->order);
	free(cmp->pend_keys);
	free(cmp->pend_lens);
	free(cmp->diffs);
	free(cmp);
}

struct recon_arena *recon_compare_arena(struct recon_compare *cmp)
{
	return &cmp->arena;
}

static uint32_t keyent_hash(const void *e)
{
	return ((const struct keyent *)e)->hash;
}

static uint32_t ident_hash(const void *e)
{
	return (uint32_t)((const struct ident *)e)->hash;
}

static void table_grow(struct table *t, uint32_t (*hashof)(const void *))
{
	size_t ncap = t->cap * 2;
	void **ns = recon_xcalloc(ncap, sizeof(*ns));

	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slot[i])
			continue;
		size_t j = hashof(t->slot[i]) & (ncap - 1);
		while (ns[j])
			j = (j + 1) & (ncap - 1);
		ns[j] = t->slot[i];
	}
	free(t->slot);
	t->slot = ns;
	t->cap = ncap;
}

static struct keyent *find_key(const struct recon_compare *cmp, const char *key, size_t len,
			       uint32_t h)
{
	const struct table *t = &cmp->keys;
	size_t i = h & (t->cap - 1);

	for (; t->slot[i]; i = (i + 1) & (t->cap - 1)) {
		struct keyent *k = t->slot[i];
		if (k->hash == h && k->key_len == len && !memcmp(k->key, key, len))
			return k;
	}
	return NULL;
}

static struct keyent *get_key(struct recon_compare *cmp, const struct recon_row *row)
{
	uint32_t h = (uint32_t)hash_bytes(row->key, row->key_len, FNV_BASIS);
	struct keyent *k = find_key(cmp, row->key, row->key_len, h);
	struct table *t = &cmp->keys;
	size_t i;

	if (k)
		return k;
	if ((t->n + 1) * 10 > t->cap * 7)
		table_grow(t, keyent_hash);
	k = recon_arena_alloc(&cmp->arena, sizeof(*k));
	memset(k, 0, sizeof(*k));
	k->key = row->key;
	k->key_len = row->key_len;
	k->hash = h;
	k->klass = -1;
	for (i = h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
		;
	t->slot[i] = k;
	t->n++;
	recon_grow((void **)&cmp->order, &cmp->aorder, cmp->norder + 1, sizeof(*cmp->order));
	cmp->order[cmp->norder++] = k;
	return k;
}

static bool ident_eq(const struct ident *a, const struct ident *b)
{
	if (a->hash != b->hash || a->entry != b->entry || (a->id == NULL) != (b->id == NULL))
		return false;
	if (a->id)
		return a->len == b->len && !memcmp(a->id, b->id, a->len);
	return a->k == b->k && a->amount == b->amount && a->time == b->time;
}

/* Records the entry's identity; true when the same entry was seen before. */
static bool seen_entry(struct recon_compare *cmp, const struct keyent *k,
		       const struct recon_row *row)
{
	struct table *t = &cmp->idents;
	struct ident probe = {0}, *e;
	uint64_t h = FNV_BASIS;
	size_t i;

	probe.entry = row->entry;
	h = hash_bytes(&probe.entry, 1, h);
	if (row->entry_id) {
		probe.id = row->entry_id;
		probe.len = row->entry_id_len;
		h = hash_bytes(row->entry_id, row->entry_id_len, h);
	} else {
		probe.k = k;
		probe.amount = row->amount;
		probe.time = row->time;
		h = hash_bytes(row->key, row->key_len, h);
		h = hash_bytes(&row->amount, sizeof(row->amount), h);
		h = hash_bytes(&row->time, sizeof(row->time), h);
	}
	probe.hash = h;
	for (i = (uint32_t)h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
		if (ident_eq(t->slot[i], &probe))
			return true;
	if ((t->n + 1) * 10 > t->cap * 7) {
		table_grow(t, ident_hash);
		for (i = (uint32_t)h & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1))
			;
	}
	e = recon_arena_alloc(&cmp->arena, sizeof(*e));
	*e = probe;
	t->slot[i] = e;
	t->n++;
	return false;
}

static bool add_saturating(int64_t *acc, int64_t v)
{
	if ((v > 0 && *acc > INT64_MAX - v) || (v < 0 && *acc < INT64_MIN - v))
		return false;
	*acc += v;
	return true;
}

void recon_compare_add(struct recon_compare *cmp, int side, const struct recon_row *row)
{
	struct keyent *k = get_key(cmp, row);

	if (side == RECON_SIDE_LOCAL) {
		if (k->n_local++ == 0)
			k->local = *row;
		else if (row->time < k->local.time)
			k->local.time = row->time; /* duplicates: the earliest row owns the key */
		return;
	}
	if (seen_entry(cmp, k, row)) {
		/* the same provider entry again: flagged, and not counted twice in the sums */
		k->up_dup = true;
		k->n_up++;
		return;
	}
	if (k->n_up == 0 || row->time < k->up_first) {
		k->up_first = row->time;
		k->up_line = row->line;
	}
	if (k->n_up == 0)
		memcpy(k->up_currency, row->currency, 4);
	else if (memcmp(k->up_currency, row->currency, 4))
		k->up_currency_conflict = true;
	k->n_up++;
	if (row->flags & RECON_ROW_LOOKED_UP)
		k->up_looked_up = true;
	bool ok = true;
	if (row->flags & RECON_ROW_HAS_STATUS) {
		/* plain rows: each row is an order in the status its source says */
		switch (row->status) {
		case RECON_ST_SUCCESS:
			ok = add_saturating(&k->paid, row->amount);
			k->n_payment++;
			break;
		case RECON_ST_REFUNDED:
			ok = add_saturating(&k->paid, row->amount) &&
			     add_saturating(&k->refunded, row->amount);
			k->n_payment++;
			break;
		case RECON_ST_CLOSED:
			ok = add_saturating(&k->other, row->amount);
			k->up_revoked = true;
			break;
		default:
			ok = add_saturating(&k->other, row->amount);
			k->up_pending = true;
			break;
		}
	} else {
		switch (row->entry) {
		case RECON_ENTRY_PAYMENT:
			ok = add_saturating(&k->paid, row->amount);
			k->n_payment++;
			break;
		case RECON_ENTRY_REFUND:
			ok = add_saturating(&k->refunded, row->amount);
			break;
		case RECON_ENTRY_REVOKE:
			/* a revocation alone (its payment in an earlier statement) carries the
			   order amount: compare it when no payment entry is present */
			ok = add_saturating(&k->other, row->amount);
			k->up_revoked = true;
			break;
		default:
			break;
		}
	}
	if (!ok) /* sums beyond int64: no honest comparison is possible */
		k->up_currency_conflict = true;
}

void recon_compare_add_rejected(struct recon_compare *cmp, int side, const struct recon_row *row)
{
	struct keyent *k = get_key(cmp, row);

	k->rejected[side == RECON_SIDE_LOCAL] = true;
}

static bool up_owned(const struct recon_compare *cmp, const struct keyent *k)
{
	if (cmp->upstream_is_statement && !k->up_looked_up)
		return true;
	return k->up_first >= cmp->win.start && k->up_first < cmp->win.end;
}

static bool local_owned(const struct recon_compare *cmp, const struct keyent *k)
{
	int64_t t = k->local.time;

	/* owned by the window holding time + margin, computed without overflow */
	return t >= cmp->win.start - cmp->job->margin_ms && t < cmp->win.end - cmp->job->margin_ms;
}

static bool owned(const struct recon_compare *cmp, const struct keyent *k)
{
	if (k->n_up)
		return up_owned(cmp, k);
	return local_owned(cmp, k);
}

static bool terminal(int st)
{
	return st == RECON_ST_SUCCESS || st == RECON_ST_REFUNDED || st == RECON_ST_CLOSED;
}

/* The folded upstream status of a key. */
static int up_status(const struct keyent *k)
{
	if (k->up_revoked)
		return RECON_ST_CLOSED; /* never paid, or paid then revoked: no money kept */
	if (k->n_payment) {
		if (k->refunded >= k->paid && k->paid > 0)
			return RECON_ST_REFUNDED;
		return RECON_ST_SUCCESS;
	}
	if (k->refunded > 0)
		return RECON_ST_REFUNDED; /* refund of an earlier statement's payment */
	return RECON_ST_PENDING;
}

/* The order amount upstream says, for comparison with the local row. */
static int64_t up_amount(const struct keyent *k)
{
	return k->n_payment ? k->paid : k->other;
}

static bool amounts_differ(const struct recon_compare *cmp, int64_t a, int64_t b)
{
	int64_t d;

	if ((b > 0 && a < INT64_MIN + b) || (b < 0 && a > INT64_MAX + b))
		return true;
	d = a - b;
	if (d < 0) {
		if (d == INT64_MIN)
			return true;
		d = -d;
	}
	return d > cmp->job->tolerance_minor;
}

static enum recon_class classify_key(struct recon_compare *cmp, const struct keyent *k)
{
	const bool up = k->n_up > 0, local = k->n_local > 0;
	int ust, lst;

	if (k->up_dup || k->n_local > 1)
		return RECON_CLASS_DUPLICATE;
	lst = local ? k->local.status : -1;
	if (up && !local) {
		ust = up_status(k);
		if (ust == RECON_ST_SUCCESS || ust == RECON_ST_REFUNDED)
			return RECON_CLASS_MISSING;
		if (ust == RECON_ST_PENDING)
			cmp->counts.in_flight++;
		return RECON_CLASS_MATCHED;
	}
	if (!up) {
		return lst == RECON_ST_SUCCESS || lst == RECON_ST_REFUNDED ? RECON_CLASS_EXTRA
									   : RECON_CLASS_MATCHED;
	}
	ust = up_status(k);
	if (k->up_currency_conflict || memcmp(k->up_currency, k->local.currency, 4))
		return RECON_CLASS_AMOUNT_MISMATCH;
	if (!k->n_payment && k->refunded > 0 && !k->up_revoked) {
		/* refund-only: the payment was in an earlier statement */
		if (k->refunded > k->local.amount &&
		    amounts_differ(cmp, k->refunded, k->local.amount))
			return RECON_CLASS_AMOUNT_MISMATCH;
		ust = amounts_differ(cmp, k->refunded, k->local.amount) ? RECON_ST_SUCCESS
									: RECON_ST_REFUNDED;
	} else {
		if (amounts_differ(cmp, up_amount(k), k->local.amount))
			return RECON_CLASS_AMOUNT_MISMATCH;
		if (k->n_payment && k->refunded > k->paid)
			return RECON_CLASS_AMOUNT_MISMATCH; /* refunded more than was paid */
	}
	if (terminal(ust) && lst == RECON_ST_PENDING) {
		if (cmp->now - k->local.time > cmp->job->stuck_after_ms)
			return RECON_CLASS_STUCK;
		cmp->counts.in_flight++;
		return RECON_CLASS_MATCHED;
	}
	if (terminal(ust) && terminal(lst) && ust != lst)
		return RECON_CLASS_STATUS_MISMATCH;
	if (ust == RECON_ST_PENDING)
		cmp->counts.in_flight++;
	return RECON_CLASS_MATCHED;
}

size_t recon_compare_pending_lookups(struct recon_compare *cmp, int side, const char ***keys,
				     const uint32_t **lens)
{
	size_t n = 0;

	for (size_t i = 0; i < cmp->norder; i++) {
		const struct keyent *k = cmp->order[i];
		bool want;
		if (k->rejected[0] || k->rejected[1])
			want = false; /* its class is undecidable anyway: no lookup */
		else if (side == RECON_SIDE_LOCAL)
			want = k->n_up && !k->n_local && up_owned(cmp, k);
		else
			want = !k->n_up && k->n_local == 1 && local_owned(cmp, k) &&
			       (k->local.status == RECON_ST_SUCCESS ||
				k->local.status == RECON_ST_REFUNDED);
		if (!want)
			continue;
		if (n >= cmp->apend) {
			size_t a = cmp->apend;
			recon_grow((void **)&cmp->pend_keys, &a, n + 1, sizeof(*cmp->pend_keys));
			cmp->pend_lens = recon_xrealloc(cmp->pend_lens,
							recon_st_mult(a, sizeof(*cmp->pend_lens)));
			cmp->apend = a;
		}
		cmp->pend_keys[n] = k->key;
		cmp->pend_lens[n] = k->key_len;
		n++;
	}
	*keys = cmp->pend_keys;
	*lens = cmp->pend_lens;
	return n;
}

static int diff_cmp(const void *a, const void *b)
{
	const struct recon_diff *x = a, *y = b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	return (x->key_len > y->key_len) - (x->key_len < y->key_len);
}

void recon_compare_classify(struct recon_compare *cmp)
{
	size_t nd = 0, ad = 0;

	memset(&cmp->counts, 0, sizeof(cmp->counts));
	free(cmp->diffs);
	cmp->diffs = NULL;
	for (size_t i = 0; i < cmp->norder; i++) {
		struct keyent *k = cmp->order[i];
		if (k->rejected[0] || k->rejected[1]) {
			/* a row of this key is unreadable: no class can be asserted */
			k->klass = -1;
			cmp->counts.keys_rejected++;
			cmp->counts.rows_other[0] += k->n_up;
			cmp->counts.rows_other[1] += k->n_local;
			continue;
		}
		if (!k->n_up && !k->n_local)
			continue;
		if (!owned(cmp, k)) {
			k->klass = -1;
			cmp->counts.rows_other[0] += k->n_up;
			cmp->counts.rows_other[1] += k->n_local;
			continue;
		}
		k->klass = (int8_t)classify_key(cmp, k);
		cmp->counts.keys_owned++;
		cmp->counts.rows_owned[0] += k->n_up;
		cmp->counts.rows_owned[1] += k->n_local;
		if (k->klass == RECON_CLASS_MATCHED) {
			cmp->counts.matched++;
			continue;
		}
		cmp->counts.classes[k->klass]++;
		recon_grow((void **)&cmp->diffs, &ad, nd + 1, sizeof(*cmp->diffs));
		struct recon_diff *d = &cmp->diffs[nd++];
		memset(d, 0, sizeof(*d));
		d->key = k->key;
		d->key_len = k->key_len;
		d->klass = (uint8_t)k->klass;
		if (k->n_up) {
			d->up.present = true;
			d->up.status = (uint8_t)up_status(k);
			memcpy(d->up.currency, k->up_currency, 4);
			d->up.amount = up_amount(k);
			d->up.refunded = k->refunded;
			d->up.time = k->up_first;
			d->up.line = k->up_line;
			d->up.rows = k->n_up;
			d->up.looked_up = k->up_looked_up;
		}
		if (k->n_local) {
			d->local.present = true;
			d->local.status = k->local.status;
			memcpy(d->local.currency, k->local.currency, 4);
			d->local.amount = k->local.amount;
			d->local.time = k->local.time;
			d->local.line = k->local.line;
			d->local.rows = k->n_local;
			d->local.looked_up = (k->local.flags & RECON_ROW_LOOKED_UP) != 0;
		}
	}
	if (nd)
		qsort(cmp->diffs, nd, sizeof(*cmp->diffs), diff_cmp);
	cmp->ndiffs = nd;
}

const struct recon_compare_counts *recon_compare_counts(const struct recon_compare *cmp)
{
	return &cmp->counts;
}

const struct recon_diff *recon_compare_diffs(const struct recon_compare *cmp, size_t *n)
{
	*n = cmp->ndiffs;
	return cmp->diffs;
}

int recon_compare_key_class(const struct recon_compare *cmp, const char *key, size_t len)
{
	uint32_t h = (uint32_t)hash_bytes(key, len, FNV_BASIS);
	const struct keyent *k = find_key(cmp, key, len, h);

	return k ? k->klass : -1;
}
