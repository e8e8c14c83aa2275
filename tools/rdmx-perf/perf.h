/* rdmx-perf: perftest-style benchmarks over the rdmx engine (and RPC).
 * One process is the server (no address), the other the client (with the
 * server's address); the client's test parameters travel to the server in
 * the connection's private data, so both sides agree. */
#ifndef RDMX_PERF_H
#define RDMX_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdmx/rdmx.h>

struct perf_opts {
	const char *test;   /* send_lat, write_lat, ... */
	const char *device; /* NULL: default device */
	uint64_t size;      /* bytes per operation */
	uint64_t iters;     /* measured iterations */
	uint16_t port;      /* cm port */
	uint32_t inflight;  /* operations in flight (bandwidth / rpc tests) */
	enum rdmx_poll_mode poll;
	const char *server;   /* NULL on the server side */
	bool passive;         /* server of one-sided tests: never progress while serving
	                         (progress once per 100 ms to notice the end) */
	bool report_gbits;    /* bandwidth in Gb/sec instead of MB/sec */
	bool out_json;        /* one JSON line per result after the table */
	uint32_t duration;    /* -D seconds (bandwidth tests); 0: -n iterations */
	bool quiet;           /* no progress meter */
	int gid_index;        /* -x: -1 = the device's default */
	uint32_t mtu;         /* -m: 0 = the device's default */
	uint32_t inline_size; /* -I: inline data up to this many bytes (0: none) */
};

/* A connected engine session: one context, one connection, one local buffer
 * registered for the test, and the peer's buffer as a remote region. */
struct perf_session {
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	struct rdmx_mr *mr;
	void *buf;
	size_t buf_len;
	struct rdmx_mr_remote *remote;
	volatile bool established;
	volatile bool disconnected;
	volatile bool failed;
	uint64_t completions; /* task completions seen by the generic callbacks */
	uint64_t errors;
};

/* The parameters the client sends in its connect private data. */
struct perf_params {
	uint8_t test_id;
	uint8_t poll;
	uint16_t reserved;
	uint32_t inflight;
	uint64_t size;
	uint64_t iters;
};

uint64_t perf_now_ns(void);
/* The monotonic clock as of its last tick (no clock-source read): for the
 * failure guards of busy loops. */
uint64_t perf_coarse_ns(void);
/* Drives progress once per the poll mode (busy: progress; block/hybrid:
 * rdmx_pe_wait). Returns completions run or a negative code. */
int perf_drive(struct perf_session *s, enum rdmx_poll_mode mode);
/* Drives until *flag is true or the peer went away; 0 or RDMX_E_DISCONNECTED. */
int perf_drive_until(struct perf_session *s, enum rdmx_poll_mode mode, volatile bool *flag);

/* Opens the device, creates pe + ctx with the task confs the caller set in
 * `confs` (callbacks get the session as ctx user data), registers a buffer of
 * buf_len bytes with `access`, and connects: listen+accept on the server,
 * connect_to_addr on the client. The client's params and buffer descriptor
 * travel in the request's private data, the server's descriptor in the
 * accept's. */
struct perf_task_conf {
	enum rdmx_task_type type;
	rdmx_task_cb ok_cb;
	rdmx_task_cb err_cb;
	uint32_t num;
};
int perf_session_open(const struct perf_opts *o, struct perf_params *params, size_t buf_len,
                      unsigned access, const struct perf_task_conf *confs, size_t nconfs,
                      struct perf_session *s);
void perf_session_close(struct perf_session *s);

/* Generic callbacks that count into the session. */
void perf_count_ok(struct rdmx_task *task, void *task_ud, void *ctx_ud);
void perf_count_err(struct rdmx_task *task, void *task_ud, void *ctx_ud);

/* perftest's header: test, device, provider, MTU, queue sizes. */
void perf_header(const struct perf_opts *o, const struct perf_session *s);

/* Prints perftest's columns and the RESULT line. samples_us may be NULL for
 * bandwidth tests. `half_rtt` documents perftest's convention in the header. */
/* perf_report with the size the run used (the client's, on the server). */
void perf_report_as(const struct perf_opts *o, uint64_t size, double *samples_us, uint64_t n,
                    uint64_t ops, uint64_t bytes, double seconds);
void perf_report(const struct perf_opts *o, double *samples_us, uint64_t n, uint64_t ops,
                 uint64_t bytes, double seconds);

/* Test registry. */
struct perf_test {
	const char *name;
	int (*run)(const struct perf_opts *o);
};
extern const struct perf_test perf_engine_tests[];
extern const size_t perf_engine_tests_count;
#ifdef RDMX_PERF_HAVE_RPC
extern const struct perf_test perf_rpc_tests[];
extern const size_t perf_rpc_tests_count;
#endif

#endif
