#include <stdio.h>
#include <string.h>

#include "recon_cmd.h"

int recon_opt_parse(int argc, char **argv, const struct recon_opt *opts, bool *help)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *eq;
		const struct recon_opt *o;
		size_t n;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			*help = true;
			continue;
		}
		if (strncmp(a, "--", 2)) {
			fprintf(stderr, "recon %s: unexpected argument '%s'\n", argv[0], a);
			return -1;
		}
		a += 2;
		eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		for (o = opts; o->name; o++)
			if (strlen(o->name) == n && !strncmp(o->name, a, n))
				break;
		if (!o->name) {
			fprintf(stderr, "recon %s: unknown option '--%.*s'\n", argv[0], (int)n, a);
			return -1;
		}
		if (!o->takes_value) {
			if (eq) {
				fprintf(stderr, "recon %s: option '--%s' takes no value\n", argv[0],
					o->name);
				return -1;
			}
			*o->flag = true;
			continue;
		}
		if (eq) {
			*o->value = eq + 1;
		} else if (i + 1 < argc) {
			*o->value = argv[++i];
		} else {
			fprintf(stderr, "recon %s: option '--%s' needs a value\n", argv[0],
				o->name);
			return -1;
		}
	}
	return 0;
}
