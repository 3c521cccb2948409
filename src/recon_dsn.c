#include "recon_dsn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recon_mem.h"

int recon_dsn_get(const struct recon_side *side, const char **dsn, struct recon_err *err)
{
	const char *v = side->dsn_env ? getenv(side->dsn_env) : NULL;

	if (!v || !*v)
		return recon_err_set(err, RECON_ECONFIG, NULL,
				     "environment variable '%s' (%s.dsn_env) is not set",
				     side->dsn_env ? side->dsn_env : "", side->role);
	*dsn = v;
	return 0;
}

void recon_dsn_mysql_init(struct recon_dsn_mysql *d)
{
	memset(d, 0, sizeof(*d));
}

void recon_dsn_mysql_release(struct recon_dsn_mysql *d)
{
	if (!d)
		return;
	free(d->user);
	recon_mem_free_secret(d->password);
	free(d->host);
	free(d->db);
	free(d->socket);
	recon_dsn_mysql_init(d);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes s[0..n) into a new string; NULL on a bad escape or an encoded NUL. */
static char *decode(const char *s, size_t n)
{
	char *out = recon_xmalloc(recon_st_add(n, 1)), *o = out;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			if (i + 2 >= n || hexval((unsigned char)s[i + 1]) < 0 ||
			    hexval((unsigned char)s[i + 2]) < 0)
				goto bad;
			*o = (char)(hexval((unsigned char)s[i + 1]) * 16 +
				    hexval((unsigned char)s[i + 2]));
			if (!*o)
				goto bad;
			o++;
			i += 2;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
bad:
	recon_mem_wipe(out, n + 1);
	free(out);
	return NULL;
}

/* Strict unsigned decimal in [1, max]; -1 otherwise. */
static long number(const char *s, size_t n, long max)
{
	long v = 0;

	if (!n || n > 9)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v >= 1 && v <= max ? v : -1;
}

static int bad(struct recon_err *err, const char *env, const char *what)
{
	return recon_err_set(err, RECON_ECONFIG, NULL,
			     "the connection string in '%s' is not a valid mysql:// URI: %s", env,
			     what);
}

/* The authority's host[:port] part, [start, end): an IPv6 host in brackets. */
static int parse_hostport(const char *hostport, const char *end, const char *env,
			  struct recon_dsn_mysql *d, struct recon_err *err)
{
	const char *hend, *port = NULL;

	if (hostport >= end)
		return 0;
	if (*hostport == '[') {
		hend = memchr(hostport, ']', (size_t)(end - hostport));
		if (!hend)
			return bad(err, env, "unterminated '[' in the host");
		if (hend + 1 < end) {
			if (hend[1] != ':')
				return bad(err, env, "junk after ']' in the host");
			port = hend + 2;
		}
		hostport++;
	} else {
		hend = memchr(hostport, ':', (size_t)(end - hostport));
		if (hend)
			port = hend + 1;
		else
			hend = end;
	}
	if (hend > hostport && !(d->host = decode(hostport, (size_t)(hend - hostport))))
		return bad(err, env, "bad percent-encoding in the host");
	if (port) {
		long v = number(port, (size_t)(end - port), 65535);
		if (v < 0)
			return bad(err, env, "the port must be a number from 1 to 65535");
		d->port = (unsigned)v;
	}
	return 0;
}

/* The authority [user[:password]@]host[:port], [p, end); userinfo ends at the last '@'. */
static int parse_authority(const char *p, const char *end, const char *env,
			   struct recon_dsn_mysql *d, struct recon_err *err)
{
	const char *at = NULL, *hostport = p;

	for (const char *q = p; q < end; q++)
		if (*q == '@')
			at = q;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		const char *uend = colon ? colon : at;
		if (uend > p && !(d->user = decode(p, (size_t)(uend - p))))
			return bad(err, env, "bad percent-encoding in the user name");
		if (colon && !(d->password = decode(colon + 1, (size_t)(at - colon - 1))))
			return bad(err, env, "bad percent-encoding in the password");
		hostport = at + 1;
	}
	return parse_hostport(hostport, end, env, d, err);
}

/* A timeout parameter's value, [v, end): 1 to max seconds into *out. */
static int parse_timeout(const char *v, const char *end, long max, const char *what, unsigned *out,
			 const char *env, struct recon_err *err)
{
	long n = number(v, (size_t)(end - v), max);

	if (n < 0) {
		char msg[64];
		snprintf(msg, sizeof(msg), "%s must be 1 to %ld seconds", what, max);
		return bad(err, env, msg);
	}
	*out = (unsigned)n;
	return 0;
}

/* One query parameter name=value, [p, amp). */
static int parse_param(const char *p, const char *amp, const char *env, struct recon_dsn_mysql *d,
		       struct recon_err *err)
{
	const char *eq = memchr(p, '=', (size_t)(amp - p));
	size_t n;
	char name[32];
	size_t k;

	if (!eq)
		return bad(err, env, "a query parameter lacks '='");
	n = (size_t)(eq - p);
	if (n == 6 && !memcmp(p, "socket", 6)) {
		free(d->socket);
		if (!(d->socket = decode(eq + 1, (size_t)(amp - eq - 1))) || !*d->socket)
			return bad(err, env, "bad socket path");
		return 0;
	}
	if (n == 15 && !memcmp(p, "connect_timeout", 15))
		return parse_timeout(eq + 1, amp, 3600, "connect_timeout", &d->connect_timeout, env,
				     err);
	if (n == 12 && !memcmp(p, "read_timeout", 12))
		return parse_timeout(eq + 1, amp, 86400, "read_timeout", &d->read_timeout, env,
				     err);
	if (n == 13 && !memcmp(p, "write_timeout", 13))
		return parse_timeout(eq + 1, amp, 86400, "write_timeout", &d->write_timeout, env,
				     err);
	/* the parameter's name only: values may be secrets */
	k = n < sizeof(name) - 1 ? n : sizeof(name) - 1;
	for (size_t i = 0; i < k; i++)
		name[i] = (p[i] >= 'a' && p[i] <= 'z') || p[i] == '_' ? p[i] : '?';
	name[k] = '\0';
	return recon_err_set(err, RECON_ECONFIG, NULL,
			     "the connection string in '%s' has an unknown "
			     "parameter '%s' (known: socket, connect_timeout, "
			     "read_timeout, write_timeout)",
			     env, name);
}

int recon_dsn_mysql_parse(const char *dsn, const char *env, struct recon_dsn_mysql *d,
			  struct recon_err *err)
{
	const char *p, *auth_end, *path_end;
	int rc;

	if (!strncmp(dsn, "mysql://", 8))
		p = dsn + 8;
	else if (!strncmp(dsn, "mariadb://", 10))
		p = dsn + 10;
	else
		return bad(err, env, "it must start with mysql:// or mariadb://");

	auth_end = p + strcspn(p, "/?#");
	if (*auth_end == '#')
		return bad(err, env, "a fragment ('#') is not allowed");
	if ((rc = parse_authority(p, auth_end, env, d, err)) < 0)
		return rc;

	/* path: /db */
	p = auth_end;
	if (*p == '/') {
		p++;
		path_end = p + strcspn(p, "?#");
		if (*path_end == '#')
			return bad(err, env, "a fragment ('#') is not allowed");
		if (memchr(p, '/', (size_t)(path_end - p)))
			return bad(err, env, "the path must be a single database name");
		if (path_end > p && !(d->db = decode(p, (size_t)(path_end - p))))
			return bad(err, env, "bad percent-encoding in the database name");
		p = path_end;
	}

	/* query: name=value&... */
	if (*p == '?')
		p++;
	while (*p) {
		const char *amp = p + strcspn(p, "&");
		if (amp > p && (rc = parse_param(p, amp, env, d, err)) < 0)
			return rc;
		p = *amp ? amp + 1 : amp;
	}
	return 0;
}

char *recon_dsn_first_line(const char *msg, const char *secret, char *out, size_t size)
{
	static const char *const prefixes[] = {"ERROR:  ", "FATAL:  ", "PANIC:  "};
	size_t n, o = 0, slen = secret ? strlen(secret) : 0;

	if (!size)
		return out;
	out[0] = '\0';
	if (!msg)
		return out;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (!strncmp(msg, prefixes[i], strlen(prefixes[i])))
			msg += strlen(prefixes[i]);
	n = strcspn(msg, "\r\n");
	while (n && (msg[n - 1] == ' ' || msg[n - 1] == '\t'))
		n--;
	for (size_t i = 0; i < n && o + 1 < size;) {
		if (slen && i + slen <= n && !memcmp(msg + i, secret, slen)) {
			for (const char *s = "***"; *s && o + 1 < size; s++)
				out[o++] = *s;
			i += slen;
			continue;
		}
		out[o++] = msg[i++];
	}
	out[o] = '\0';
	return out;
}
