/* hello server: answers hello.Greeter/SayHello (hello.proto).
 *   hello_server [-p PORT] [--once]      (default port 18700; --once: exit
 *                                         after the first client leaves) */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hello.rdmx.h"
#include "net.h"

static volatile bool stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = true;
}

/* runs on the server's thread; req is valid until this returns */
static void say_hello(struct rdmx_rpc_server_call *call, const hello_HelloRequest *req, void *arg)
{
	unsigned *count = arg;
	char text[300];
	hello_HelloReply reply;

	snprintf(text, sizeof(text), "Hello, %.*s!", (int)req->name.len, req->name.data);
	hello_HelloReply_init(&reply);
	reply.message = rdmx_str_c(text);
	reply.count = ++*count;
	hello_Greeter_SayHello_respond(call, RDMX_RPC_OK, NULL, &reply);
}

int main(int argc, char **argv)
{
	struct hello_Greeter_handlers handlers = {say_hello};
	struct rdmx_rpc_server *server;
	unsigned count = 0;
	uint16_t port = 18700;
	bool once = false;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			printf("usage: hello_server [-p PORT] [--once]\n"
			       "The plain cm flow it uses (no TLS) is unauthenticated and "
			       "unencrypted:\n"
			       "use it only on a trusted network.\n");
			return 0;
		}
		if (strcmp(argv[i], "-p") == 0 && i + 1 < argc)
			port = (uint16_t)atoi(argv[++i]);
		else if (strcmp(argv[i], "--once") == 0)
			once = true;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (rdmx_rpc_server_create(&server) || hello_Greeter_register(server, &handlers, &count))
		return 1;
	fprintf(stderr,
	        "%s: warning: the plain cm flow is unauthenticated and unencrypted; use it only on "
	        "a trusted network\n",
	        "hello_server");
	printf("hello_server: listening on port %u\n", port);
	fflush(stdout);
	rc = net_serve(port, server, once, &stop);
	rdmx_rpc_server_destroy(&server);
	rdmx_codec_release_bindings(server);
	if (rc)
		fprintf(stderr, "hello_server: %s\n", rdmx_strerror(rc));
	printf("hello_server: %u greetings\n", count);
	return rc ? 1 : 0;
}
