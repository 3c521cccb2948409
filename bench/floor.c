/*
 * bench/floor: the read floor. read(2)s each file in 1 MiB blocks and counts
 * newlines; prints "rows_upstream N" (lines after the header) per file in
 * argument order. No tool can reconcile faster than it can read.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[1 << 20];

	for (int i = 1; i < argc; i++) {
		int fd = open(argv[i], O_RDONLY);
		unsigned long long lines = 0;
		ssize_t n;

		if (fd < 0) {
			perror(argv[i]);
			return 1;
		}
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			for (char *p = buf, *e = buf + n; (p = memchr(p, '\n', (size_t)(e - p)));
			     p++)
				lines++;
		if (n < 0) {
			perror(argv[i]);
			return 1;
		}
		close(fd);
		printf("rows_%s %llu\n", i == 1 ? "upstream" : "local", lines ? lines - 1 : 0);
	}
	return 0;
}
