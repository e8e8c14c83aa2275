/* tcp provider: the device.
 *
 * One device per open: a data listener bound to the device's address
 * (RDMX_TCP_ADDR, default 127.0.0.1, or the address given to
 * rdmx_dev_open_by_addr) on an ephemeral port, the key table, and the soft
 * NIC thread (nic.c), started with the first context and joined at close. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "tcp.h"

#define TCP_DEV_NAME "tcp"
#define TCP_DEFAULT_ADDR "127.0.0.1"

/* Fills ss from a numeric address; the family in *family. */
static int parse_ip(const char *ip, uint16_t port, struct sockaddr_storage *ss, socklen_t *len,
                    int *family)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, ip, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		*len = sizeof(*s4);
		*family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		*len = sizeof(*s6);
		*family = AF_INET6;
		return 0;
	}
	return RDMX_E_INVAL;
}

int rdmx__tcp_dev_list(struct rdmx_dev_info *infos, size_t max, size_t *count)
{
	if (max >= 1 && infos) {
		memset(&infos[0], 0, sizeof(infos[0]));
		snprintf(infos[0].name, sizeof(infos[0].name), "%s", TCP_DEV_NAME);
		snprintf(infos[0].provider, sizeof(infos[0].provider), "tcp");
	}
	*count += 1;
	return 0;
}

/* An address is ours when a socket can bind to it. */
int rdmx__tcp_dev_find_by_addr(const char *ip, char name[RDMX_DEV_NAME_MAX])
{
	struct sockaddr_storage ss;
	socklen_t len;
	int family, fd, rc;

	if (parse_ip(ip, 0, &ss, &len, &family))
		return RDMX_E_NO_DEVICE;
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return RDMX_E_NO_DEVICE;
	rc = bind(fd, (struct sockaddr *)&ss, len);
	close(fd);
	if (rc)
		return RDMX_E_NO_DEVICE;
	snprintf(name, RDMX_DEV_NAME_MAX, "%s", TCP_DEV_NAME);
	return 0;
}

/* A non-blocking listening socket on ss (port 0: ephemeral). */
int rdmx__tcp_listen_socket(const struct sockaddr_storage *ss, socklen_t len, int backlog)
{
	int one = 1, fd;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		RDMX_ERR("tcp: socket failed: %s", strerror(errno));
		return RDMX_E_PROVIDER;
	}
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		RDMX_WARN("tcp: SO_REUSEADDR failed: %s", strerror(errno));
	if (bind(fd, (const struct sockaddr *)ss, len)) {
		int err = errno;

		RDMX_ERR("tcp: bind failed: %s", strerror(err));
		close(fd);
		return err == EADDRINUSE      ? RDMX_E_EXISTS
		       : err == EADDRNOTAVAIL ? RDMX_E_NO_DEVICE
		                              : RDMX_E_PROVIDER;
	}
	if (listen(fd, backlog)) {
		RDMX_ERR("tcp: listen failed: %s", strerror(errno));
		close(fd);
		return RDMX_E_PROVIDER;
	}
	return fd;
}

bool rdmx__tcp_accept_rests(struct tcp_accept_rest *r, int err)
{
	if (err != EMFILE && err != ENFILE && err != ENOBUFS && err != ENOMEM)
		return false;
	r->until = rdmx__now_ns() + TCP_ACCEPT_REST_MS * 1000000ull;
	return true;
}

void rdmx__tcp_accept_log(struct tcp_accept_rest *r, int err, const char *what)
{
	uint64_t skipped = 0;
	char more[48] = "";

	if (!rdmx__log_rate_ok(&r->log, rdmx__now_ns(), &skipped))
		return;
	if (skipped)
		snprintf(more, sizeof(more), "; %llu more not logged", (unsigned long long)skipped);
	if (r->until)
		RDMX_WARN("tcp: %s: accept failed: %s, not accepting for %u ms%s", what,
		          strerror(err), TCP_ACCEPT_REST_MS, more);
	else
		RDMX_WARN("tcp: %s: accept failed: %s%s", what, strerror(err), more);
}

static uint64_t grace_from_env(void)
{
	const char *s = getenv("RDMX_TCP_NIC_GRACE_US");
	char *end;
	unsigned long v;

	if (!s || !*s)
		return TCP_GRACE_US_DEFAULT * 1000ull;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v == 0 || v > 1000000ul) {
		RDMX_WARN("tcp: RDMX_TCP_NIC_GRACE_US=%s ignored (1..1000000)", s);
		return TCP_GRACE_US_DEFAULT * 1000ull;
	}
	return (uint64_t)v * 1000ull;
}

int rdmx__tcp_dev_open(struct rdmx_dev *dev, const char *ip)
{
	struct sockaddr_storage ss;
	struct tcp_dev *td;
	socklen_t len;
	int family, rc;

	if (strcmp(dev->name, TCP_DEV_NAME) != 0)
		return RDMX_E_NO_DEVICE;
	if (!ip) {
		ip = getenv("RDMX_TCP_ADDR");
		if (!ip || !*ip)
			ip = TCP_DEFAULT_ADDR;
	}
	if (parse_ip(ip, 0, &ss, &len, &family)) {
		RDMX_ERR("tcp: device address %s is not a numeric IP address", ip);
		return RDMX_E_INVAL;
	}
	td = calloc(1, sizeof(*td));
	if (!td)
		return RDMX_E_NOMEM;
	td->dev = dev;
	td->family = family;
	td->grace_ns = grace_from_env();
	td->nic_epfd = -1;
	td->nic_efd = -1;
	td->next_ctx_serial = 1;
	td->max_hellos = TCP_MAX_HELLOS;
	td->max_hellos_per_source = TCP_MAX_HELLOS_PER_SOURCE;
	atomic_init(&td->hello_timeout_ms, TCP_HELLO_TIMEOUT_MS);
	rc = rdmx__tcp_keytab_init(&td->keys);
	if (rc)
		goto free_dev;
	rc = pthread_mutex_init(&td->lock, NULL);
	if (rc) {
		rc = RDMX_E_PROVIDER;
		goto fini_keys;
	}
	/* deep enough that a flood of stalled connections queued behind the
	 * NIC's next accept does not drop a real client's SYN */
	td->lfd = rdmx__tcp_listen_socket(&ss, len, 1024);
	if (td->lfd < 0) {
		rc = td->lfd;
		goto destroy_lock;
	}
	td->addr_len = sizeof(td->addr);
	if (getsockname(td->lfd, (struct sockaddr *)&td->addr, &td->addr_len)) {
		RDMX_ERR("tcp: getsockname failed: %s", strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto close_listener;
	}
	if (family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)&td->addr;

		memcpy(td->addr_raw, &s4->sin_addr, 4);
		td->port = ntohs(s4->sin_port);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&td->addr;

		memcpy(td->addr_raw, &s6->sin6_addr, 16);
		td->port = ntohs(s6->sin6_port);
	}
	td->nic_epfd = epoll_create1(EPOLL_CLOEXEC);
	if (td->nic_epfd < 0) {
		RDMX_ERR("tcp: epoll_create1 failed: %s", strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto close_listener;
	}
	td->nic_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (td->nic_efd < 0) {
		RDMX_ERR("tcp: eventfd failed: %s", strerror(errno));
		rc = RDMX_E_PROVIDER;
		goto close_epoll;
	}
	dev->prov = td;
	RDMX_DBG("tcp: device on %s port %u", ip, td->port);
	return 0;

close_epoll:
	close(td->nic_epfd);
close_listener:
	close(td->lfd);
destroy_lock:
	pthread_mutex_destroy(&td->lock);
fini_keys:
	rdmx__tcp_keytab_fini(&td->keys);
free_dev:
	free(td);
	return rc;
}

void rdmx__tcp_dev_close(struct rdmx_dev *dev)
{
	struct tcp_dev *td = TCP_DEV(dev);

	if (!td)
		return;
	rdmx__tcp_nic_stop(td);
	while (td->hellos) {
		struct tcp_hello *h = td->hellos;

		td->hellos = h->next;
		close(h->fd);
		free(h);
	}
	close(td->nic_efd);
	close(td->nic_epfd);
	close(td->lfd);
	pthread_mutex_destroy(&td->lock);
	rdmx__tcp_keytab_fini(&td->keys);
	free(td);
	dev->prov = NULL;
}

int rdmx__tcp_dev_query_caps(const struct rdmx_dev *dev, struct rdmx_dev_caps *caps)
{
	(void)dev;
	caps->max_send_queue_size = TCP_MAX_QUEUE;
	caps->max_recv_queue_size = TCP_MAX_QUEUE;
	caps->max_buf_list_len = TCP_MAX_SGE;
	caps->max_message_size = TCP_MAX_MSG;
	caps->gid_table_len = 1;
	caps->transport_types = RDMX_TRANSPORT_RC;
	caps->max_connections = TCP_MAX_CONNS;
	/* every payload is copied into the frame anyway: inline is accepted
	 * and reported, and costs or saves nothing */
	caps->max_inline = TCP_MAX_INLINE;
	caps->atomics = true;
	/* the soft NIC performs both itself, with the RC guarantees */
	caps->atomic_write_native = true;
	caps->flush_native = true;
	/* nothing is pinned: registration is a table entry */
	caps->odp = true;
	return 0;
}

int rdmx__tcp_dev_get_gid(const struct rdmx_dev *dev, uint32_t index, uint8_t gid[16])
{
	const struct tcp_dev *td = TCP_DEV(dev);

	if (index != 0)
		return RDMX_E_INVAL;
	if (td->family == AF_INET) {
		memset(gid, 0, 10);
		gid[10] = 0xff;
		gid[11] = 0xff;
		memcpy(gid + 12, td->addr_raw, 4);
	} else {
		memcpy(gid, td->addr_raw, 16);
	}
	return 0;
}
