/* rdmx-kv: the key-value service (kv.proto) — server and client CLI. */
#ifndef RDMX_KV_H
#define RDMX_KV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rdmx_dev;
struct rdmx_tls_config;

#define KV_MAX_KEY 4096u
#define KV_MAX_VALUE (64u << 20) /* 64 MiB */
#define KV_DEFAULT_SERVICE "kv"
#define KV_SCAN_DEFAULT_LIMIT 100u
#define KV_SCAN_MAX_LIMIT 1000u
/* a Scan page's entries as encoded (keys, values, framing) beyond its
 * first; the channel's largest message caps it too (scan.h) */
#define KV_SCAN_PAGE_BYTES (4u << 20)
/* largest channel message: a 64 MiB value and the request around it; a
 * device whose messages are smaller (Soft-RoCE: 8 MiB) lowers both */
#define KV_MSG_OVERHEAD (64u << 10)
#define KV_MAX_MSG ((uint64_t)KV_MAX_VALUE + KV_MSG_OVERHEAD)

int kv_serve_main(int argc, char **argv);
int kv_client_main(int argc, char **argv);
/* the full --help text (client and serve), and the short usage-error line */
#include <stdio.h>
void kv_usage(FILE *f);
void kv_usage_error(void);

/* common.c */
struct kv_tls {
	const char *ca, *cert, *key, *crl; /* PEM files; crl optional */
	bool allow_insecure_key;           /* accept a key group or others can read */
};
/* "host:port" / "[v6]:port" -> 0, or -1 */
int kv_split_addr(const char *s, char *host, size_t host_len, uint16_t *port);
/* A loaded config that accepts peers whose certificate name matches one of
 * `peers` (none: any certificate of the CA). NULL on error (said on stderr,
 * prefixed by `who`). */
struct rdmx_tls_config *kv_tls_config(const struct kv_tls *t, const char *const *peers, int n_peers,
                                      const char *who);
/* Opens the default device (RDMX_DEVICE overrides); the largest channel
 * message and value that fit it. */
int kv_open_device(struct rdmx_dev **dev, uint64_t *max_msg, uint64_t *max_value, const char *who);
/* "12", "4k", "64M", "1G" -> bytes; -1 on error */
int64_t kv_parse_size(const char *s);

#endif
