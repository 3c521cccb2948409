/* cmocka.h needs these first, in this order: keep clang-format from sorting them. */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>

#include <cmocka.h>
/* clang-format on */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "recon_log.h"

/*
 * stderr pointed at one end of a SOCK_SEQPACKET pair: every write(2) to it
 * arrives as one packet at the other end, so the packets are the writes.
 */
struct capture {
	int saved, peer;
};

static void capture_start(struct capture *c)
{
	int sv[2];

	fflush(stderr);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	c->saved = dup(STDERR_FILENO);
	assert_true(c->saved >= 0);
	assert_true(dup2(sv[0], STDERR_FILENO) >= 0);
	close(sv[0]);
	c->peer = sv[1];
}

/* The next write to stderr, NUL-terminated, in buf; its length. */
static size_t capture_next(struct capture *c, char *buf, size_t size)
{
	ssize_t n = recv(c->peer, buf, size - 1, MSG_DONTWAIT);

	assert_true(n > 0);
	buf[n] = '\0';
	return (size_t)n;
}

static void capture_end(struct capture *c)
{
	char b[16];

	/* nothing more was written */
	assert_true(recv(c->peer, b, sizeof(b), MSG_DONTWAIT) < 0);
	fflush(stderr);
	assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
	close(c->saved);
	close(c->peer);
}

/*
 * A log line and an ALERT line each reach stderr in one write: a line
 * written in pieces took three system calls (20,000 alerts of a 10M run:
 * 60,000 writes) and could interleave with another writer's lines.
 */
static void test_log_one_write_a_line(void **state)
{
	struct capture c;
	char buf[8192];

	(void)state;
	unsetenv("RECON_LOG_PRIORITY");
	unsetenv("JOURNAL_STREAM");
	recon_log_set_level(RECON_LOG_INFO);
	capture_start(&c);
	recon_log_alert("amount_mismatch job '%s' key %s", "bench", "ORD-1");
	recon_log(RECON_LOG_WARN, "%d rows %s", 3, "skipped");
	recon_log(RECON_LOG_DEBUG, "not shown at info");
	assert_int_equal(capture_next(&c, buf, sizeof(buf)),
			 strlen("recon: ALERT amount_mismatch job 'bench' key ORD-1\n"));
	assert_string_equal(buf, "recon: ALERT amount_mismatch job 'bench' key ORD-1\n");
	capture_next(&c, buf, sizeof(buf));
	assert_string_equal(buf, "recon: warning: 3 rows skipped\n");
	capture_end(&c);
}

/* A line longer than the stack buffer (1024 bytes) is still whole, in one write. */
static void test_log_long_line(void **state)
{
	struct capture c;
	char long_text[3001], buf[8192], want[3100];

	(void)state;
	memset(long_text, 'x', 3000);
	long_text[3000] = '\0';
	for (size_t n = 1000; n <= 1030; n++) { /* on and around the buffer's end */
		long_text[n] = '\0';
		capture_start(&c);
		recon_log_alert("%s", long_text);
		snprintf(want, sizeof(want), "recon: ALERT %s\n", long_text);
		assert_int_equal(capture_next(&c, buf, sizeof(buf)), strlen(want));
		assert_string_equal(buf, want);
		capture_end(&c);
		long_text[n] = 'x';
	}
	capture_start(&c);
	recon_log(RECON_LOG_ERROR, "%s", long_text);
	snprintf(want, sizeof(want), "recon: error: %s\n", long_text);
	assert_int_equal(capture_next(&c, buf, sizeof(buf)), strlen(want));
	assert_string_equal(buf, want);
	capture_end(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_log_one_write_a_line),
	    cmocka_unit_test(test_log_long_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
