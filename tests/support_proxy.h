/*
 * support_proxy: a TCP proxy on 127.0.0.1 in front of a database server that
 * can be frozen: it then stops forwarding, as a server stopped with SIGSTOP
 * would look to its clients (the connection stays, nothing answers). For the
 * I/O timeout tests of the writers, without stopping the shared test servers.
 * One client connection per proxy.
 */
#ifndef SUPPORT_PROXY_H
#define SUPPORT_PROXY_H

#include <pthread.h>

struct support_proxy {
	int lfd;
	unsigned port; /* where clients connect */
	char host[64]; /* the server (an IPv4 address) */
	unsigned up_port;
	volatile int frozen; /* set to 1 to freeze */
	volatile int stop;
	pthread_t th;
};

/* Starts a proxy to host:port (host an IPv4 address). Aborts on failure. */
void support_proxy_start(struct support_proxy *p, const char *host, unsigned port);
/* Stops it and closes both ends. */
void support_proxy_stop(struct support_proxy *p);

#endif
