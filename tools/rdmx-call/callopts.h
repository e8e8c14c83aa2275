/* rdmx-call's command line once parsed (main.c): what every command
 * (list.c, describe.c, method.c) and both ways to reach the server
 * (target.c: ADDR; service.c: --registry --service) read. */
#ifndef RDMX_CALL_CALLOPTS_H
#define RDMX_CALL_CALLOPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/rpc_stream.h>

#include "rpcnet.h"

#define CALLOPTS_MAX_INCLUDES 32

struct callopts {
	const char *proto; /* --proto: the IDL file; NULL: the server's reflection */
	const char *includes[CALLOPTS_MAX_INCLUDES];
	size_t n_includes;
	struct rpcnet_tls tls;
	bool secure, verbose;
	int timeout_ms;
	uint64_t deadline_ns; /* -max-time: the whole call's end; 0: none */
	const char *addr, *what, *data;
	const char *data_opt;           /* -d: the requests ("@": standard input) */
	struct rdmx_rpc_md headers;     /* -H */
	const char *registry, *service; /* --registry URL --service NAME: no ADDR */
};

#endif
