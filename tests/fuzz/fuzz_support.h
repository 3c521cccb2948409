/*
 * fuzz_support: scratch files for the libFuzzer harnesses (tests/fuzz/fuzz_*.c).
 *
 * The readers under test take paths, so each harness writes its input to a
 * file in a private scratch folder: mkdtemp() under $TMPDIR (or /tmp) at the
 * first call, removed with everything in it at exit. One folder per process,
 * so parallel fuzzing jobs (-jobs, -fork) never share files.
 */
#ifndef RECON_FUZZ_SUPPORT_H
#define RECON_FUZZ_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* The scratch folder's path, created on first use; aborts when it cannot be made. */
const char *fuzz_scratch_dir(void);

/*
 * Path of `name` inside the scratch folder; subfolders of name are created.
 * Caller frees with free().
 */
char *fuzz_scratch_path(const char *name);

/* Writes data[0..size) to path (created or truncated); aborts on any I/O error. */
void fuzz_write_file(const char *path, const void *data, size_t size);

/* A NUL-terminated copy of data[0..size); caller frees with free(). */
char *fuzz_strndup(const uint8_t *data, size_t size);

#endif
