/* hello server: answers hello.Greeter/SayHello (hello.proto).
 *   hello_server [-p PORT] [--once]      (default port 18700; --once: exit
 *                                         after the first client leaves) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hello.rdmx.h"
#include "net.h"

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
	int rc;

	if (net_server_args(argc, argv, "hello_server", &port, &once))
		return 0;
	if (rdmx_rpc_server_create(&server) || hello_Greeter_register(server, &handlers, &count))
		return 1;
	rc = net_server_run("hello_server", server, port, once);
	printf("hello_server: %u greetings\n", count);
	return rc ? 1 : 0;
}
