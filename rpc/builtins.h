/* The services every RPC server answers without being asked to: health
 * (health.c, include/rdmx/health.h) and reflection (reflection.c,
 * include/rdmx/reflection.h). rpc_server.c calls rdmx__rpc_builtins_add
 * from rdmx_rpc_server_create and rdmx__rpc_builtins_release from
 * rdmx_rpc_server_destroy; everything else stays in these two files. */
#ifndef RDMX_RPC_BUILTINS_H
#define RDMX_RPC_BUILTINS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/health.h>

struct rdmx_rpc_server;

int rdmx__rpc_builtins_add(struct rdmx_rpc_server *server);
void rdmx__rpc_builtins_release(struct rdmx_rpc_server *server);

/* ---- shared by health.c and reflection.c ---- */

struct rdmx__refl_file {
	char *name, *text;
	char *package;   /* "" when none */
	char **services; /* full names ("package.Service") */
	size_t n_services;
	char **imports; /* as written in the import statements */
	size_t n_imports;
};

struct rdmx__health_watch;

struct rdmx__health_entry {
	char *service;
	enum rdmx_health_status status;
};

/* One per server: the `arg` of its builtin methods. */
struct rdmx__builtins {
	struct rdmx_rpc_server *server;
	struct rdmx__refl_file *files;
	size_t n_files;
	struct rdmx__health_entry *health;
	size_t n_health;
	_Atomic enum rdmx_health_status overall; /* set from any thread (multi-worker servers) */
	struct rdmx__health_watch *watchers;     /* open Health/Watch streams (health.c) */
	/* health.c: health_lock guards health, n_health and watchers (set from
	 * any thread); health_gen counts the changes, read by each watcher on
	 * its own engine's thread */
	pthread_mutex_t health_lock;
	bool health_lock_ok;
	_Atomic uint64_t health_gen;
};

struct rdmx__builtins *rdmx__builtins_of(const struct rdmx_rpc_server *server);
/* true when a method named "<service>/..." is registered on the server */
bool rdmx__builtins_has_service(const struct rdmx__builtins *b, const char *service, size_t len);

/* health.c */
extern const char rdmx__health_idl[];
int rdmx__health_register(struct rdmx__builtins *b);
void rdmx__health_fini(struct rdmx__builtins *b);

/* reflection.c: a request whose only field is string 1 (HealthCheckRequest,
 * FileContainingRequest); an empty body is the default message. */
int rdmx__builtins_decode_str1(const void *req, size_t len, const char **s, size_t *n);

#endif
