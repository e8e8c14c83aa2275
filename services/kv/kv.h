/* rdmx-kv: the key-value service (kv.proto) — server and client CLI. */
#ifndef RDMX_KV_H
#define RDMX_KV_H

#include <stddef.h>
#include <stdint.h>

#define KV_MAX_KEY 4096u
#define KV_MAX_VALUE (64u << 20) /* 64 MiB */
#define KV_DEFAULT_SERVICE "kv"
#define KV_SCAN_DEFAULT_LIMIT 100u
#define KV_SCAN_MAX_LIMIT 1000u
#define KV_SCAN_PAGE_BYTES (4u << 20) /* values per page, beyond the first entry */

int kv_serve_main(int argc, char **argv);
int kv_client_main(int argc, char **argv);

/* "12", "4k", "64M", "1G" -> bytes; -1 on error */
int64_t kv_parse_size(const char *s);

#endif
