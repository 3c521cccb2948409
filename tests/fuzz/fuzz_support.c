#define _XOPEN_SOURCE 700 /* nftw */
#include "fuzz_support.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[4096];

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void scratch_cleanup(void)
{
	if (scratch[0])
		nftw(scratch, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void die(const char *what, const char *path)
{
	fprintf(stderr, "fuzz: %s '%s': %s\n", what, path, strerror(errno));
	abort();
}

const char *fuzz_scratch_dir(void)
{
	const char *tmp = getenv("TMPDIR");

	if (scratch[0])
		return scratch;
	if (!tmp || !tmp[0])
		tmp = "/tmp";
	snprintf(scratch, sizeof(scratch), "%s/recon-fuzz.XXXXXX", tmp);
	if (!mkdtemp(scratch))
		die("cannot create scratch folder", scratch);
	atexit(scratch_cleanup);
	return scratch;
}

char *fuzz_scratch_path(const char *name)
{
	const char *dir = fuzz_scratch_dir();
	size_t n = strlen(dir) + 1 + strlen(name) + 1;
	char *path = malloc(n);

	if (!path)
		abort();
	snprintf(path, n, "%s/%s", dir, name);
	/* create the folders between the scratch folder and the file */
	for (char *p = path + strlen(dir) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			die("cannot create folder", path);
		*p = '/';
	}
	return path;
}

void fuzz_write_file(const char *path, const void *data, size_t size)
{
	const char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		die("cannot create", path);
	while (size) {
		ssize_t n = write(fd, p, size);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			die("cannot write", path);
		p += n;
		size -= (size_t)n;
	}
	if (close(fd) < 0)
		die("cannot close", path);
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	if (size)
		memcpy(s, data, size);
	s[size] = '\0';
	return s;
}
