/* rdmx-kv: the kv service (kv.proto) and its command-line client.
 *   rdmx-kv serve ...            the server (server.c)
 *   rdmx-kv put|get|del|scan ... the client (client.c)
 * `rdmx-kv --help` and `rdmx-kv serve --help` print the options. */
#include <string.h>

#include "kv.h"

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "serve") == 0)
		return kv_serve_main(argc - 1, argv + 1);
	return kv_client_main(argc, argv);
}
