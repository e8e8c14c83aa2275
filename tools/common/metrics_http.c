/* /metrics over libmicrohttpd in its external epoll mode: one epoll fd
 * watched by an ev_io, MHD_run from the loop (and from a timer for idle
 * connection timeouts). */
#include "metrics_http.h"

#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <ev.h>
#include <microhttpd.h>

#include <rdmx/metrics.h>

#define IDLE_TIMEOUT_S 10u
/* Connections at once, and from one address: a peer that opens many and
 * trickles a byte before each idle timeout would otherwise hold every one
 * of them and lock the scraper out for as long as it likes. */
#define MAX_CONNECTIONS 64u
#define MAX_PER_SOURCE 8u

struct rdmx_metrics_http {
	struct ev_loop *loop;
	struct MHD_Daemon *d;
	ev_io io;
	ev_timer tick;
	rdmx_metrics_http_fill_cb fill;
	void *arg;
	uint16_t port;
};

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r =
	    MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **con_cls)
{
	struct rdmx_metrics_http *h = cls;
	struct MHD_Response *r;
	enum MHD_Result ret;
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int rc;

	(void)version;
	(void)upload_data;
	if (!*con_cls) { /* first call: headers only */
		*con_cls = h;
		return MHD_YES;
	}
	if (*upload_data_size) {
		*upload_data_size = 0; /* a body to GET: ignored */
		return MHD_YES;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n");
	if (strcmp(url, "/metrics"))
		return answer_text(c, MHD_HTTP_NOT_FOUND, "try /metrics\n");
	f = open_memstream(&body, &len);
	if (!f)
		return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	rc = h->fill(f, h->arg);
	if (fclose(f) || rc) {
		free(body);
		return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics unavailable\n");
	}
	r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, RDMX_METRICS_CONTENT_TYPE);
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static void run_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct rdmx_metrics_http *h = w->data;

	(void)loop;
	(void)revents;
	MHD_run(h->d);
}

static void tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct rdmx_metrics_http *h = w->data;

	(void)loop;
	(void)revents;
	MHD_run(h->d);
}

static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss, const char *who)
{
	struct addrinfo hints, *res = NULL;
	char service[8];
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(service, sizeof(service), "%u", port);
	rc = getaddrinfo(host && *host ? host : NULL, service, &hints, &res);
	if (rc || !res) {
		fprintf(stderr, "%s: --metrics host '%s': %s\n", who, host ? host : "",
		        gai_strerror(rc));
		return -1;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

int rdmx_metrics_http_create(struct ev_loop *loop, const char *host, uint16_t port,
                             rdmx_metrics_http_fill_cb fill, void *arg, const char *who,
                             struct rdmx_metrics_http **out)
{
	struct rdmx_metrics_http *h;
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

	if (!loop || !fill || !out)
		return -1;
	if (resolve(host, port, &ss, who))
		return -1;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	h = calloc(1, sizeof(*h));
	if (!h) {
		fprintf(stderr, "%s: --metrics: out of memory\n", who);
		return -1;
	}
	h->loop = loop;
	h->fill = fill;
	h->arg = arg;
	h->d = MHD_start_daemon(
	    flags, port, NULL, NULL, on_request, h, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_LIMIT,
	    MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT, MAX_PER_SOURCE, MHD_OPTION_END);
	if (!h->d) {
		fprintf(stderr, "%s: --metrics: cannot listen on %s:%u\n", who,
		        host && *host ? host : "*", port);
		free(h);
		return -1;
	}
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		fprintf(stderr, "%s: --metrics: no epoll descriptor\n", who);
		MHD_stop_daemon(h->d);
		free(h);
		return -1;
	}
	ev_io_init(&h->io, run_cb, info->epoll_fd, EV_READ);
	h->io.data = h;
	ev_io_start(loop, &h->io);
	ev_timer_init(&h->tick, tick_cb, 1.0, 1.0);
	h->tick.data = h;
	ev_timer_start(loop, &h->tick);
	*out = h;
	return 0;
}

uint16_t rdmx_metrics_http_port(const struct rdmx_metrics_http *h)
{
	return h ? h->port : 0;
}

void rdmx_metrics_http_destroy(struct rdmx_metrics_http **hp)
{
	struct rdmx_metrics_http *h = hp ? *hp : NULL;

	if (!h)
		return;
	ev_io_stop(h->loop, &h->io);
	ev_timer_stop(h->loop, &h->tick);
	MHD_stop_daemon(h->d);
	free(h);
	*hp = NULL;
}
