/* Fixture of the secure RPC tests (rdmx/rpc_secure.h): a real rdmx-bootstrapd
 * process, a secure RPC server on its own libev thread, certificates made at
 * test time (tls_test_pki), and the devices of the environment:
 *   RDMX_TEST_DEVICE       the server's device (default "tcp")
 *   RDMX_TEST_PEER_DEVICE  the client's device (default: RDMX_TEST_DEVICE)
 *   RDMX_TEST_ADDR         address the daemon and the server listen on
 *                          (default 127.0.0.1)
 *   RDMX_BOOTSTRAPD        the rdmx-bootstrapd program (default: the one of
 *                          this build tree)
 * Identities: the daemon is server.test, the RPC service client2.test, the
 * caller client.test. */
#ifndef RDMX_TEST_RPCSEC_FIX_H
#define RDMX_TEST_RPCSEC_FIX_H

#include <stdint.h>
#include <sys/types.h>

#include <rdmx/rpc.h>
#include <rdmx/rpc_secure.h>
#include <rdmx/status.h>
#include <rdmx/tls.h>

#include "test_assert.h"
#include "tls_test_pki.h"

#define FIX_SERVICE "echo"
#define FIX_SERVER_HELLO "echo-server"
#define FIX_CLIENT_HELLO "echo-client"
/* methods of the test service */
#define FIX_ECHO "rdmx.test.Echo/Echo"
#define FIX_HOLD "rdmx.test.Echo/Hold" /* answered only when cancelled */
/* streams the server accepts and never finishes: server-streaming, bidi */
#define FIX_WATCH "rdmx.test.Echo/Watch"
#define FIX_CHAT "rdmx.test.Echo/Chat"

extern struct tls_test_pki fix_pki;

const char *fix_device(int peer); /* 0: server's, 1: client's */
const char *fix_addr(void);
int64_t fix_now_ms(void);

/* Suite init/fini: the PKI and log capture. */
void fix_setup(void);
void fix_teardown(void);

/* ---- rdmx-bootstrapd as a child process ---- */
struct fix_bsd {
	pid_t pid;
	uint16_t port;
};
/* Starts it on fix_addr():0 with the cluster CA and server.test; waits for
 * its "listening" line. */
void fix_bsd_start(struct fix_bsd *d);
void fix_bsd_stop(struct fix_bsd *d);
/* A registry client config for `name` (allows the daemon's name). */
struct rdmx_tls_config *fix_registry_config(const char *name);

/* ---- the secure RPC server thread ---- */
enum fix_cmd {
	FIX_CMD_NONE = 0,
	FIX_CMD_KILL_TLS,  /* shutdown(2) the TLS socket of the latest client */
	FIX_CMD_KILL_RDMA, /* disconnect the engine connection of the latest client */
	FIX_CMD_BUSY,      /* keep an event pending on the loop at every iteration */
	FIX_CMD_CALM,      /* stop that */
};

/* cancels: held calls cancelled; each client's connection has a record of
 * its own (the endpoint's user data, as an application's per-connection
 * state would be) that gone marks as freed: late_cancels counts cancel
 * callbacks that ran on such a record, gone_holding gone callbacks that
 * ran while their connection still held a call not cancelled.
 * streams: FIX_WATCH / FIX_CHAT streams open on the server; stream_ends
 * their on_done callbacks (stream_code: the last one's code),
 * late_stream_ends those that ran on a freed record, gone_streaming gone
 * callbacks that ran while their connection still had a stream open. */
struct fix_server_stats {
	int accepts, connected, gone, gone_status, held, echoes;
	int cancels, late_cancels, gone_holding;
	int streams, stream_ends, stream_code, late_stream_ends, gone_streaming;
	char cert[64], hello[64];
};

/* Starts the server (identity client2.test, allowing `allow`) listening on
 * fix_addr():0; joins FIX_SERVICE at the registry when bsd_port != 0. */
void fix_server_start(const char *allow, uint16_t bsd_port);
uint16_t fix_server_port(void);
void fix_server_stats(struct fix_server_stats *st);
/* Runs a command on the server's loop and waits until it ran. */
void fix_server_cmd(enum fix_cmd cmd);
/* Waits (bounded) until the server's counters satisfy pred. */
int fix_server_wait(int (*pred)(const struct fix_server_stats *st), int guard_ms);
void fix_server_stop(void);
/* fix_server_stop, then *st: the counters once the server is destroyed. */
void fix_server_stop_stats(struct fix_server_stats *st);
/* A function the server's gone callback runs first, on the loop thread
 * (NULL: none; set it before what releases the clients). */
typedef void (*fix_gone_hook)(struct rdmx_rpc_secure_server *srv,
                              struct rdmx_rpc_secure_conn *conn);
void fix_server_set_gone_hook(fix_gone_hook hook);
/* On the loop thread: a client connection the server has not released
 * yet, other than `conn` (NULL when none, or past FIX_CONNS clients). */
struct rdmx_rpc_secure_conn *fix_server_other_conn(const struct rdmx_rpc_secure_conn *conn);

/* The caller's config: identity `name`, allowing `allow`. */
struct rdmx_tls_config *fix_client_config(const char *name, const char *allow);
/* Client options for the peer device. */
void fix_client_opts(struct rdmx_rpc_secure_opts *o);

#endif
