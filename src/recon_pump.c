#include "recon_pump.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "recon_mem.h"

#define PUMP_BLOCKS 4 /* read ahead at most this many blocks */

struct pump_block {
	unsigned char *data;
	long n; /* fn's result for this block: bytes, 0 (end) or < 0 (error) */
	struct recon_err err;
};

struct recon_pump {
	recon_pump_fn fn;
	void *arg;
	size_t block;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct pump_block b[PUMP_BLOCKS];
	unsigned head, count; /* filled blocks: b[head], b[head + 1], ... (mod PUMP_BLOCKS) */
	size_t at;	      /* bytes of b[head] already given */
	bool over;	      /* fn returned 0 or < 0: nothing after it */
	atomic_bool stop;
};

static void *pump_main(void *arg)
{
	struct recon_pump *p = arg;

	for (;;) {
		struct pump_block *b;
		long n;

		pthread_mutex_lock(&p->mu);
		while (p->count == PUMP_BLOCKS && !atomic_load(&p->stop))
			pthread_cond_wait(&p->cv, &p->mu);
		if (atomic_load(&p->stop)) {
			pthread_mutex_unlock(&p->mu);
			return NULL;
		}
		b = &p->b[(p->head + p->count) % PUMP_BLOCKS];
		pthread_mutex_unlock(&p->mu);

		/* only this thread touches a block that is not filled yet */
		recon_err_init(&b->err);
		n = p->fn(p->arg, b->data, p->block, &b->err);
		b->n = n;

		pthread_mutex_lock(&p->mu);
		p->count++;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		if (n <= 0)
			return NULL;
	}
}

struct recon_pump *recon_pump_new(recon_pump_fn fn, void *arg, size_t block)
{
	struct recon_pump *p = recon_xcalloc(1, sizeof(*p));

	p->fn = fn;
	p->arg = arg;
	p->block = block;
	for (unsigned i = 0; i < PUMP_BLOCKS; i++)
		p->b[i].data = recon_xmalloc(block);
	atomic_init(&p->stop, false);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv, NULL);
	if (pthread_create(&p->thread, NULL, pump_main, p)) {
		pthread_mutex_destroy(&p->mu);
		pthread_cond_destroy(&p->cv);
		for (unsigned i = 0; i < PUMP_BLOCKS; i++)
			free(p->b[i].data);
		free(p);
		return NULL;
	}
	return p;
}

long recon_pump_read(struct recon_pump *p, void *buf, size_t n, struct recon_err *err)
{
	struct pump_block *b;
	size_t k;

	if (p->over)
		return 0;
	pthread_mutex_lock(&p->mu);
	while (!p->count)
		pthread_cond_wait(&p->cv, &p->mu);
	b = &p->b[p->head];
	pthread_mutex_unlock(&p->mu);

	if (b->n <= 0) {
		/* the end, or fn's error where the stream met it */
		p->over = true;
		if (b->n < 0 && err)
			*err = b->err;
		return b->n;
	}
	k = (size_t)b->n - p->at < n ? (size_t)b->n - p->at : n;
	memcpy(buf, b->data + p->at, k);
	p->at += k;
	if (p->at == (size_t)b->n) {
		/* the block is given whole: back to the thread */
		pthread_mutex_lock(&p->mu);
		p->head = (p->head + 1) % PUMP_BLOCKS;
		p->count--;
		p->at = 0;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
	}
	return (long)k;
}

void recon_pump_free(struct recon_pump *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	atomic_store(&p->stop, true);
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	pthread_join(p->thread, NULL);
	pthread_mutex_destroy(&p->mu);
	pthread_cond_destroy(&p->cv);
	for (unsigned i = 0; i < PUMP_BLOCKS; i++)
		free(p->b[i].data);
	free(p);
}
