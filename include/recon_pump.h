/*
 * recon_pump: a read function run ahead on a thread of its own, into a few
 * blocks, while the caller parses what it already gave. The CSV reader pumps
 * a compressed statement (an Alipay .zip, a .gz) this way, so that inflating
 * it and splitting its lines take two cores, not one after the other.
 *
 * The bytes, their order, the end and any error are exactly the read
 * function's: recon_pump_read() gives them in turn, an error (with its
 * message) where the stream met it.
 */
#ifndef RECON_PUMP_H
#define RECON_PUMP_H

#include <stdbool.h>
#include <stddef.h>

#include "recon_err.h"

/* Reads up to n bytes into buf: the count (> 0), 0 at the end, < 0 with err set. */
typedef long (*recon_pump_fn)(void *arg, void *buf, size_t n, struct recon_err *err);

struct recon_pump;

/* Starts fn(arg, ...) on a thread, block bytes a read; NULL if no thread can be made. */
struct recon_pump *recon_pump_new(recon_pump_fn fn, void *arg, size_t block);

/* The next bytes (at most n), as fn gave them: the count, 0 at the end, or < 0 (err set). */
long recon_pump_read(struct recon_pump *p, void *buf, size_t n, struct recon_err *err);

/*
 * Stops the thread once fn's current call returns (a call that may wait long,
 * on a FIFO, must be told to stop by its own means first) and frees the pump.
 * NULL-safe.
 */
void recon_pump_free(struct recon_pump *p);

#endif
