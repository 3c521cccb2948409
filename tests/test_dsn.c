/*
 * Tests for src/recon_dsn.c: the mysql:// URI parser (percent-decoding, the
 * last '@' ending userinfo, every part optional, errors that never quote the
 * string) and the first line of a server message with its password scrubbed.
 * No server needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "recon_dsn.h"
#include "recon_err.h"

static void test_dsn_mysql_parse(void **state)
{
	struct recon_dsn_mysql d;
	struct recon_err err;
	char line[64];

	(void)state;
	recon_dsn_mysql_init(&d);
	recon_err_init(&err);
	assert_int_equal(recon_dsn_mysql_parse("mysql://us%40r:p%3Aw%2F@db.example:3307/shop?"
					       "socket=%2Frun%2Fm.sock&connect_timeout=5",
					       "X", &d, &err),
			 0);
	assert_string_equal(d.user, "us@r");
	assert_string_equal(d.password, "p:w/");
	assert_string_equal(d.host, "db.example");
	assert_int_equal(d.port, 3307);
	assert_string_equal(d.db, "shop");
	assert_string_equal(d.socket, "/run/m.sock");
	assert_int_equal(d.connect_timeout, 5);
	recon_dsn_mysql_release(&d);
	/* '@' inside the password: userinfo ends at the last '@' */
	assert_int_equal(recon_dsn_mysql_parse("mariadb://u:a@b@[::1]:3306/db", "X", &d, &err), 0);
	assert_string_equal(d.password, "a@b");
	assert_string_equal(d.host, "::1");
	assert_int_equal(d.port, 3306);
	recon_dsn_mysql_release(&d);
	/* everything optional: option files fill in */
	assert_int_equal(recon_dsn_mysql_parse("mysql://", "X", &d, &err), 0);
	assert_null(d.user);
	assert_null(d.password);
	assert_null(d.host);
	assert_null(d.db);
	recon_dsn_mysql_release(&d);
	assert_int_equal(recon_dsn_mysql_parse("mysql://u@/db?socket=/s.sock", "X", &d, &err), 0);
	assert_string_equal(d.user, "u");
	assert_null(d.password);
	assert_null(d.host);
	recon_dsn_mysql_release(&d);
	assert_int_equal(err.code, 0);

	/* errors never quote the string */
	{
		static const char *const bad[] = {
		    "postgresql://u:SecretA1@h/db",  "mysql://u:Secret%zzB2@h/db",
		    "mysql://u:SecretC3@h:99999/db", "mysql://u:SecretD4@h/db?password=SecretD4",
		    "mysql://u:SecretE5@h/a/b",	     "mysql://u:SecretF6@[::1/db",
		    "mysql://u:SecretG7@h/db#frag",  "mysql://u:SecretH8@h:x/db",
		};
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char text[512];
			recon_err_init(&err);
			assert_int_equal(recon_dsn_mysql_parse(bad[i], "ENV_X", &d, &err),
					 RECON_ECONFIG);
			recon_dsn_mysql_release(&d);
			recon_err_str(&err, text, sizeof(text));
			print_message("error: %s\n", text);
			assert_null(strstr(text, "Secret"));
			assert_non_null(strstr(text, "ENV_X"));
		}
	}

	/* the first line of a message, password scrubbed */
	recon_dsn_first_line("FATAL:  no pw42 here\n\tmore", "pw42", line, sizeof(line));
	assert_string_equal(line, "no *** here");
	recon_dsn_first_line("short", NULL, line, 4);
	assert_string_equal(line, "sho");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dsn_mysql_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
