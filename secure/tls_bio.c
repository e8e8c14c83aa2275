/* A minimal socket BIO: OpenSSL's own uses write(2), which raises SIGPIPE
 * when the peer is gone; a library must not kill its host process for that,
 * so this one sends with MSG_NOSIGNAL. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <pthread.h>
#include <sys/socket.h>

#include <openssl/bio.h>

#include "tls_internal.h"

static BIO_METHOD *method;
static pthread_once_t method_once = PTHREAD_ONCE_INIT;

static int retriable(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == EINTR;
}

static int sock_write(BIO *b, const char *buf, int len)
{
	ssize_t n = send(BIO_get_fd(b, NULL), buf, (size_t)len, MSG_NOSIGNAL);

	BIO_clear_retry_flags(b);
	if (n < 0 && retriable(errno))
		BIO_set_retry_write(b);
	return (int)n;
}

static int sock_read(BIO *b, char *buf, int len)
{
	ssize_t n = recv(BIO_get_fd(b, NULL), buf, (size_t)len, 0);

	BIO_clear_retry_flags(b);
	if (n < 0 && retriable(errno))
		BIO_set_retry_read(b);
	return (int)n;
}

static int sock_puts(BIO *b, const char *str)
{
	size_t n = 0;

	while (str[n])
		n++;
	return sock_write(b, str, (int)n);
}

static long sock_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	switch (cmd) {
	case BIO_C_SET_FD:
		BIO_set_data(b, (void *)(intptr_t) * (int *)ptr);
		BIO_set_shutdown(b, (int)num);
		BIO_set_init(b, 1);
		return 1;
	case BIO_C_GET_FD:
		if (!BIO_get_init(b))
			return -1;
		if (ptr)
			*(int *)ptr = (int)(intptr_t)BIO_get_data(b);
		return (long)(intptr_t)BIO_get_data(b);
	case BIO_CTRL_FLUSH:
		return 1;
	case BIO_CTRL_GET_CLOSE:
		return BIO_get_shutdown(b);
	case BIO_CTRL_SET_CLOSE:
		BIO_set_shutdown(b, (int)num);
		return 1;
	default:
		return 0;
	}
}

static int sock_create(BIO *b)
{
	BIO_set_init(b, 0);
	BIO_set_data(b, (void *)(intptr_t)-1);
	return 1;
}

/* The connection owns and closes the fd; the BIO never does. */
static int sock_destroy(BIO *b)
{
	BIO_set_init(b, 0);
	return 1;
}

static void method_init(void)
{
	BIO_METHOD *m = BIO_meth_new(
	    BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR, "rdmx socket");

	if (!m)
		return;
	if (!BIO_meth_set_write(m, sock_write) || !BIO_meth_set_read(m, sock_read) ||
	    !BIO_meth_set_puts(m, sock_puts) || !BIO_meth_set_ctrl(m, sock_ctrl) ||
	    !BIO_meth_set_create(m, sock_create) || !BIO_meth_set_destroy(m, sock_destroy)) {
		BIO_meth_free(m);
		return;
	}
	method = m;
}

BIO *rdmx__tls_bio_new(int fd)
{
	BIO *b;

	pthread_once(&method_once, method_init);
	if (!method)
		return NULL;
	b = BIO_new(method);
	if (b)
		BIO_set_fd(b, fd, BIO_NOCLOSE);
	return b;
}
