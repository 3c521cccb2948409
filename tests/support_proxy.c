#include "support_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void *proxy_main(void *arg)
{
	struct support_proxy *p = arg;
	struct sockaddr_in a;
	int c = accept(p->lfd, NULL, NULL), u = socket(AF_INET, SOCK_STREAM, 0);
	char buf[4096];

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)p->up_port);
	inet_pton(AF_INET, p->host, &a.sin_addr);
	if (c < 0 || u < 0 || connect(u, (struct sockaddr *)&a, sizeof(a)) < 0)
		goto out;
	while (!p->stop) {
		struct pollfd fds[2] = {{c, POLLIN, 0}, {u, POLLIN, 0}};
		if (p->frozen) { /* like SIGSTOP: the connection stays, nothing answers */
			struct timespec ts = {0, 20000000L};
			nanosleep(&ts, NULL);
			continue;
		}
		if (poll(fds, 2, 50) <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			ssize_t n;
			if (!(fds[i].revents & (POLLIN | POLLHUP)))
				continue;
			n = read(fds[i].fd, buf, sizeof(buf));
			if (n <= 0 || write(fds[1 - i].fd, buf, (size_t)n) != n)
				goto out;
		}
	}
out:
	if (c >= 0)
		close(c);
	if (u >= 0)
		close(u);
	return NULL;
}

void support_proxy_start(struct support_proxy *p, const char *host, unsigned port)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);

	memset(p, 0, sizeof(*p));
	snprintf(p->host, sizeof(p->host), "%s", host);
	p->up_port = port;
	p->lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(p->lfd, 1) < 0 || getsockname(p->lfd, (struct sockaddr *)&a, &alen) < 0 ||
	    pthread_create(&p->th, NULL, proxy_main, p) != 0) {
		fprintf(stderr, "support_proxy: cannot start\n");
		abort();
	}
	p->port = ntohs(a.sin_port);
}

void support_proxy_stop(struct support_proxy *p)
{
	p->stop = 1;
	shutdown(p->lfd, SHUT_RDWR);
	pthread_join(p->th, NULL);
	close(p->lfd);
}
