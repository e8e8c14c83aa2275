/* GET /metrics over HTTP (libmicrohttpd), driven by the program's libev
 * loop: every request is answered on the loop's thread, so the exposition
 * reads the counters the loop owns without locks. Other paths answer 404,
 * other methods 405. */
#ifndef RDMX_TOOLS_METRICS_HTTP_H
#define RDMX_TOOLS_METRICS_HTTP_H

#include <stdint.h>
#include <stdio.h>

struct ev_loop;
struct rdmx_metrics_http;

/* Writes the exposition to f; 0 or a negative code (then 500). */
typedef int (*rdmx_metrics_http_fill_cb)(FILE *f, void *arg);

/* Listens on host:port ("" or NULL host: every address; port 0: any).
 * 0, or -1 with the reason on stderr prefixed by `who`. */
int rdmx_metrics_http_create(struct ev_loop *loop, const char *host, uint16_t port,
                             rdmx_metrics_http_fill_cb fill, void *arg, const char *who,
                             struct rdmx_metrics_http **out);
/* The bound port. */
uint16_t rdmx_metrics_http_port(const struct rdmx_metrics_http *h);
/* Stops and frees; NULL / *h == NULL is a no-op. On the loop's thread. */
void rdmx_metrics_http_destroy(struct rdmx_metrics_http **h);

#endif
