#include "recon_log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static enum recon_log_level log_level = RECON_LOG_INFO;

void recon_log_set_level(enum recon_log_level level)
{
	log_level = level;
}

enum recon_log_level recon_log_get_level(void)
{
	return log_level;
}

/*
 * Is stderr read by a log system that understands "<N>" priority prefixes:
 * journald (JOURNAL_STREAM names stderr's device and inode, as systemd sets it
 * for a unit) or logger --prio-prefix (RECON_LOG_PRIORITY=1, the crontab's)?
 * Asked once: neither changes while recon runs.
 */
static bool priority_prefix(void)
{
	static int known = -1;
	const char *js, *rp;
	unsigned long long dev, ino;
	struct stat st;

	if (known >= 0)
		return known;
	js = getenv("JOURNAL_STREAM");
	rp = getenv("RECON_LOG_PRIORITY");
	if (rp && !strcmp(rp, "1"))
		known = 1;
	else if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st) < 0)
		known = 0;
	else
		known =
		    (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
	return known;
}

/*
 * Writes head, fmt's text and a newline to stderr as one write: stderr is
 * unbuffered, and a line written piece by piece took three system calls (a
 * real 10M run wrote 20,000 ALERT lines in 60,000 writes, 0.37 s) and could
 * interleave with another process's lines in a shared log.
 */
static void log_line(const char *head, const char *fmt, va_list ap) RECON_PRINTF(2, 0);
static void log_line(const char *head, const char *fmt, va_list ap)
{
	char buf[1024], *p = buf;
	const size_t h = strlen(head);
	va_list aq;
	int n;

	va_copy(aq, ap);
	n = h < sizeof(buf) ? vsnprintf(buf + h, sizeof(buf) - h, fmt, aq) : -1;
	va_end(aq);
	if (n >= 0 && h + (size_t)n + 1 > sizeof(buf) && (p = malloc(h + (size_t)n + 2)))
		vsnprintf(p + h, (size_t)n + 1, fmt, ap);
	if (n < 0 || !p) { /* no room to assemble it: in pieces */
		fputs(head, stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		return;
	}
	memcpy(p, head, h);
	p[h + (size_t)n] = '\n';
	fwrite(p, 1, h + (size_t)n + 1, stderr);
	if (p != buf)
		free(p);
}

void recon_log(enum recon_log_level level, const char *fmt, ...)
{
	static const char *const prefix[] = {"error: ", "warning: ", "", "debug: "};
	static const char *const priority[] = {"<3>", "<4>", "<6>", "<7>"}; /* syslog(3) */
	char head[32];
	va_list ap;

	if (level > log_level)
		return;
	snprintf(head, sizeof(head), "%srecon: %s", priority_prefix() ? priority[level] : "",
		 prefix[level]);
	va_start(ap, fmt);
	log_line(head, fmt, ap);
	va_end(ap);
}

void recon_log_alert(const char *fmt, ...)
{
	va_list ap;

	if (log_level < RECON_LOG_WARN)
		return;
	va_start(ap, fmt);
	log_line("recon: ALERT ", fmt, ap);
	va_end(ap);
}

/* Appends s[0..n) to out, truncating; *used tracks the length. */
static void put(char *out, size_t size, size_t *used, const char *s, size_t n)
{
	if (*used + 1 >= size)
		return;
	if (n > size - 1 - *used)
		n = size - 1 - *used;
	memcpy(out + *used, s, n);
	*used += n;
	out[*used] = '\0';
}

/* Does s start with "password" (any case) followed by '='? Returns the length to the value. */
static size_t password_key(const char *s)
{
	static const char *const keys[] = {"password", "passwd", "pwd"};
	size_t i, n;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		n = strlen(keys[i]);
		if (!strncasecmp(s, keys[i], n)) {
			const char *p = s + n;
			while (*p == ' ')
				p++;
			if (*p == '=')
				return (size_t)(p - s) + 1;
		}
	}
	return 0;
}

char *recon_log_redact(const char *dsn, char *out, size_t size)
{
	size_t used = 0;
	const char *p, *scheme, *at, *colon, *end_auth;

	if (!size)
		return out;
	out[0] = '\0';
	if (!dsn)
		return out;
	p = dsn;
	scheme = strstr(dsn, "://");
	if (scheme) {
		/* userinfo ends at the last '@' before the first '/', '?' or '#' */
		const char *auth = scheme + 3;
		end_auth = auth + strcspn(auth, "/?#");
		at = NULL;
		for (const char *q = auth; q < end_auth; q++)
			if (*q == '@')
				at = q;
		put(out, size, &used, dsn, (size_t)(auth - dsn));
		p = auth;
		if (at) {
			colon = memchr(auth, ':', (size_t)(at - auth));
			if (colon) {
				put(out, size, &used, auth, (size_t)(colon - auth));
				put(out, size, &used, ":***", 4);
				p = at;
			}
		}
	}
	/* keyword form and query parameters: password=... up to a blank or '&' */
	while (*p) {
		int boundary =
		    (p == dsn) || p[-1] == ' ' || p[-1] == '?' || p[-1] == '&' || p[-1] == '\t';
		size_t k = boundary ? password_key(p) : 0;
		if (k) {
			put(out, size, &used, p, k);
			put(out, size, &used, "***", 3);
			p += k;
			if (*p == '\'') {
				/* libpq quoted value: ends at an unescaped quote */
				p++;
				while (*p && *p != '\'') {
					if (*p == '\\' && p[1])
						p++;
					p++;
				}
				if (*p)
					p++;
			} else {
				while (*p && *p != ' ' && *p != '&' && *p != '\t')
					p++;
			}
			continue;
		}
		put(out, size, &used, p, 1);
		p++;
	}
	return out;
}
