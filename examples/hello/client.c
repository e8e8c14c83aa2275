/* hello client: calls hello.Greeter/SayHello, blocking then async.
 *   hello_client [-H HOST] [-p PORT] [NAME]   (default 127.0.0.1, 18700, "world") */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hello.rdmx.h"
#include "net.h"

static void on_reply(enum rdmx_rpc_code code, const char *message, const hello_HelloReply *resp,
                     void *arg)
{
	(void)message;
	*(int *)arg = code == RDMX_RPC_OK ? 1 : -1;
	if (resp) /* valid during this callback only */
		printf("async:    %.*s (#%u)\n", (int)resp->message.len, resp->message.data,
		       resp->count);
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *name = "world";
	uint16_t port = 18700;
	struct net_client *net;
	struct rdmx_arena arena;
	struct rdmx_rpc_status status;
	struct rdmx_rpc_call_opts opts = {2000000, false}; /* 2 s deadline */
	hello_HelloRequest req;
	hello_HelloReply reply;
	int i, rc, done = 0;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: hello_client [-H HOST] [-p PORT] [NAME]\n"
			       "The plain cm flow it uses (no TLS) is unauthenticated and "
			       "unencrypted:\n"
			       "use it only on a trusted network.\n");
			return 0;
		}
		if (strcmp(argv[i], "-H") == 0 && i + 1 < argc)
			host = argv[++i];
		else if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
			port = (uint16_t)atoi(argv[++i]);
		else
			name = argv[i];
	}
	fprintf(stderr,
	        "%s: warning: the plain cm flow is unauthenticated and unencrypted; use it only on "
	        "a trusted network\n",
	        "hello_client");
	rc = net_connect(host, port, &net);
	if (rc) {
		fprintf(stderr, "hello_client: connecting to %s:%u: %s\n", host, port,
		        rdmx_strerror(rc));
		return 1;
	}
	hello_HelloRequest_init(&req);
	req.name = rdmx_str_c(name);

	/* blocking: the reply's strings live in the arena */
	rdmx_arena_init(&arena, NULL, 0, 0);
	rc = hello_Greeter_SayHello(net_rpc(net), &req, &reply, &arena, &opts, &status);
	if (rc == 0)
		printf("blocking: %s (#%u)\n", reply.message.data, reply.count);
	else
		fprintf(stderr, "hello_client: SayHello: %s\n",
		        rc < 0 ? rdmx_strerror(rc) : rdmx_rpc_code_name((enum rdmx_rpc_code)rc));
	rdmx_arena_fini(&arena);

	/* async: the callback runs from progress */
	if (rc == 0)
		rc = hello_Greeter_SayHello_async(net_rpc(net), &req, &opts, on_reply, &done, NULL);
	while (rc == 0 && !done)
		rdmx_rpc_ep_progress(net_rpc(net));
	net_close(&net);
	return rc == 0 && done == 1 ? 0 : 1;
}
