#include "recon_dsn.h"

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

int recon_dsn_mysql_parse(const char *dsn, const char *env, struct recon_dsn_mysql *d,
			  struct recon_err *err)
{
	const char *p, *auth_end, *at = NULL, *hostport, *path_end, *q;
	size_t n;

	if (!strncmp(dsn, "mysql://", 8))
		p = dsn + 8;
	else if (!strncmp(dsn, "mariadb://", 10))
		p = dsn + 10;
	else
		return bad(err, env, "it must start with mysql:// or mariadb://");

	/* authority: [user[:password]@]host[:port]; userinfo ends at the last '@' */
	auth_end = p + strcspn(p, "/?#");
	if (*auth_end == '#')
		return bad(err, env, "a fragment ('#') is not allowed");
	for (q = p; q < auth_end; q++)
		if (*q == '@')
			at = q;
	hostport = p;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		const char *uend = colon ? colon : at;
		if (uend > p && !(d->user = decode(p, (size_t)(uend - p))))
			return bad(err, env, "bad percent-encoding in the user name");
		if (colon && !(d->password = decode(colon + 1, (size_t)(at - colon - 1))))
			return bad(err, env, "bad percent-encoding in the password");
		hostport = at + 1;
	}
	if (hostport < auth_end) {
		const char *hend, *port = NULL;
		if (*hostport == '[') {
			hend = memchr(hostport, ']', (size_t)(auth_end - hostport));
			if (!hend)
				return bad(err, env, "unterminated '[' in the host");
			if (hend + 1 < auth_end) {
				if (hend[1] != ':')
					return bad(err, env, "junk after ']' in the host");
				port = hend + 2;
			}
			hostport++;
		} else {
			hend = memchr(hostport, ':', (size_t)(auth_end - hostport));
			if (hend)
				port = hend + 1;
			else
				hend = auth_end;
		}
		if (hend > hostport && !(d->host = decode(hostport, (size_t)(hend - hostport))))
			return bad(err, env, "bad percent-encoding in the host");
		if (port) {
			long v = number(port, (size_t)(auth_end - port), 65535);
			if (v < 0)
				return bad(err, env, "the port must be a number from 1 to 65535");
			d->port = (unsigned)v;
		}
	}

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
		const char *eq = memchr(p, '=', (size_t)(amp - p));
		if (amp == p) {
			p++;
			continue;
		}
		if (!eq)
			return bad(err, env, "a query parameter lacks '='");
		n = (size_t)(eq - p);
		if (n == 6 && !memcmp(p, "socket", 6)) {
			free(d->socket);
			if (!(d->socket = decode(eq + 1, (size_t)(amp - eq - 1))) || !*d->socket)
				return bad(err, env, "bad socket path");
		} else if (n == 15 && !memcmp(p, "connect_timeout", 15)) {
			long v = number(eq + 1, (size_t)(amp - eq - 1), 3600);
			if (v < 0)
				return bad(err, env, "connect_timeout must be 1 to 3600 seconds");
			d->connect_timeout = (unsigned)v;
		} else if (n == 12 && !memcmp(p, "read_timeout", 12)) {
			long v = number(eq + 1, (size_t)(amp - eq - 1), 86400);
			if (v < 0)
				return bad(err, env, "read_timeout must be 1 to 86400 seconds");
			d->read_timeout = (unsigned)v;
		} else if (n == 13 && !memcmp(p, "write_timeout", 13)) {
			long v = number(eq + 1, (size_t)(amp - eq - 1), 86400);
			if (v < 0)
				return bad(err, env, "write_timeout must be 1 to 86400 seconds");
			d->write_timeout = (unsigned)v;
		} else {
			/* the parameter's name only: values may be secrets */
			char name[32];
			size_t k = n < sizeof(name) - 1 ? n : sizeof(name) - 1;
			for (size_t i = 0; i < k; i++)
				name[i] = (p[i] >= 'a' && p[i] <= 'z') || p[i] == '_' ? p[i] : '?';
			name[k] = '\0';
			return recon_err_set(err, RECON_ECONFIG, NULL,
					     "the connection string in '%s' has an unknown "
					     "parameter '%s' (known: socket, connect_timeout, "
					     "read_timeout, write_timeout)",
					     env, name);
		}
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
