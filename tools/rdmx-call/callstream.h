/* rdmx-call's calls with metadata and streams (callstream.c): request
 * headers from -H, response headers and trailers for -v, every kind of
 * method (unary, server-, client-, bidi-streaming) with a sequence of JSON
 * requests in and each response printed as it arrives. */
#ifndef RDMX_CALL_CALLSTREAM_H
#define RDMX_CALL_CALLSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rdmx/rpc_stream.h>

#include "json.h"
#include "pbjson.h"

/* "key: value" (grpcurl's -H) appended to md: the key lower-cased and
 * trimmed, the value after the colon without its leading blanks. 0, or -1
 * with the reason on stderr. */
int callmd_parse_header(const char *arg, struct rdmx_rpc_md *md);
/* grpcurl's verbose block: the title line, "key: value" per entry ("-bin"
 * values in base64) or "(empty)", then a blank line. */
void callmd_print(FILE *f, const char *title, const struct rdmx_rpc_md *md);

/* -v's "Response contents:" before the JSON and a blank line after it
 * (verbose), or the JSON alone, on stdout. */
void callmd_print_response(const struct jbuf *json, bool verbose);
/* -v's last stdout line: "Sent N request(s) and received M response(s)". */
void callmd_print_counts(size_t sent, size_t got);
/* -v's line on stderr for one call: "rdmx-call: NAME: CODE on device DEV,
 * T us, S bytes sent, R received" (T since t0_ns, CLOCK_MONOTONIC; S and R
 * the message bytes each way), then `more` (may be ""). */
void callmd_print_status(const char *name, enum rdmx_rpc_code code, const char *device,
                         uint64_t t0_ns, size_t sent, size_t got, const char *more);
/* grpcurl's "ERROR:" block for a call that ended with code (not OK) and
 * message (may be NULL), on stderr. Returns the exit status, 64 + code. */
int callmd_status_exit(enum rdmx_rpc_code code, const char *message);

/* Where the requests come from: a text in memory (the -d argument, a file)
 * or a file descriptor read as the call goes (-d @: standard input), a
 * sequence of JSON values with blanks between them, one request each. */
struct callsrc {
	struct jbuf buf; /* text not consumed yet, from off */
	size_t off;
	int fd; /* -1: all of the text is in buf */
	bool eof;
	size_t count; /* requests taken so far */
};
void callsrc_init_text(struct callsrc *src, const char *text, size_t len);
void callsrc_init_fd(struct callsrc *src, int fd);
void callsrc_fini(struct callsrc *src);

struct callstream_opts {
	uint64_t timeout_us;               /* the whole call's deadline; 0: none */
	const struct rdmx_rpc_md *headers; /* request headers (may be empty) */
	bool verbose;                      /* grpcurl's -v blocks on stdout */
	uint64_t deadline_ns;              /* CLOCK_MONOTONIC; 0: none (bounds reading src) */
	const char *device;                /* the connection's, for -v's status line */
};

/* Calls method m on ep with the requests of src (a unary or server-streaming
 * method takes exactly one; an empty source is "{}" for them), written as
 * they come and as the stream's flow control allows; prints each response
 * as JSON on stdout as it arrives; with verbose, grpcurl's blocks on stdout
 * and the call's device, status and latency on stderr (callmd_print_status)
 * once it ended. Returns the exit status: 0 OK, 1
 * failure, 64 + the RPC code (DEADLINE_EXCEEDED when the deadline passes
 * while the requests are still being read). */
int callstream_run(struct rdmx_rpc_ep *ep, const struct gen_method *m, const char *full_name,
                   struct callsrc *src, const struct callstream_opts *o);

#endif
