/* rdmx-perf: session set-up over the cm flow, progress driving, reporting. */
#include "perf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <rdmx/pe.h>

#define PERF_GUARD_NS (60ull * 1000 * 1000 * 1000) /* failure guard, not a timing test */

uint64_t perf_now_ns(void)
{
	return rdmx_pe_now_ns();
}

uint64_t perf_coarse_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One drive of the engine in `mode`: a busy one is one progress pass; else
 * rdmx_pe_wait in that mode (the engine's own mode is set to it: a serving
 * side that blocks must not spin in a busy engine). */
int perf_drive(struct perf_session *s, enum rdmx_poll_mode mode)
{
	if (mode == RDMX_POLL_BUSY)
		return rdmx_pe_progress(s->pe);
	int rc = rdmx_pe_set_poll_mode(s->pe, mode, 50);
	return rc ? rc : rdmx_pe_wait(s->pe, 100);
}

int perf_drive_until(struct perf_session *s, enum rdmx_poll_mode mode, volatile bool *flag)
{
	uint64_t start = perf_now_ns();
	while (!*flag) {
		if (s->disconnected || s->failed)
			return RDMX_E_DISCONNECTED;
		int rc = perf_drive(s, mode);
		if (rc < 0)
			return rc;
		if (perf_now_ns() - start > PERF_GUARD_NS)
			return RDMX_E_TIMEDOUT;
	}
	return 0;
}

void perf_count_ok(struct rdmx_task *task, void *task_ud, void *ctx_ud)
{
	(void)task;
	(void)task_ud;
	((struct perf_session *)ctx_ud)->completions++;
}

void perf_count_err(struct rdmx_task *task, void *task_ud, void *ctx_ud)
{
	struct perf_session *s = ctx_ud;
	(void)task_ud;
	if (!s->disconnected)
		fprintf(stderr, "rdmx-perf: task failed: %s\n",
		        rdmx_strerror(rdmx_task_get_status(task)));
	s->errors++;
}

/* ---- connection set-up (cm flow: no side channel carries secrets) ---- */

struct perf_pd {
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	struct perf_params params;
};

static struct perf_params *g_params; /* the session being opened (single-threaded tool) */

static int adopt_peer(struct perf_session *s, struct rdmx_conn *conn)
{
	const void *pd;
	size_t len;
	struct perf_pd peer;
	int rc = rdmx_conn_get_private_data(conn, &pd, &len);
	if (rc)
		return rc;
	if (len < sizeof(peer.desc))
		return RDMX_E_PROTOCOL;
	memset(&peer, 0, sizeof(peer));
	memcpy(&peer, pd, len < sizeof(peer) ? len : sizeof(peer));
	if (len >= sizeof(peer) && g_params)
		*g_params = peer.params;
	return rdmx_mr_remote_from_descriptor(peer.desc, sizeof(peer.desc), &s->remote);
}

static void on_request(struct rdmx_conn *conn, void *ctx_ud)
{
	struct perf_session *s = ctx_ud;
	struct perf_pd mine;
	if (s->conn || adopt_peer(s, conn) != 0) {
		rdmx_conn_reject(conn);
		return;
	}
	memset(&mine, 0, sizeof(mine));
	rdmx_mr_get_descriptor(s->mr, mine.desc);
	if (rdmx_conn_accept(conn, &mine, sizeof(mine.desc)) != 0) {
		rdmx_conn_reject(conn);
		return;
	}
	s->conn = conn;
}

static void on_established(struct rdmx_conn *conn, void *conn_ud, void *ctx_ud)
{
	struct perf_session *s = ctx_ud;
	(void)conn_ud;
	if (!s->remote && adopt_peer(s, conn) != 0) {
		fprintf(stderr, "rdmx-perf: peer sent no buffer descriptor\n");
		s->failed = true;
		return;
	}
	s->conn = conn;
	s->established = true;
}

static void on_failure(struct rdmx_conn *conn, void *conn_ud, void *ctx_ud)
{
	struct perf_session *s = ctx_ud;
	(void)conn;
	(void)conn_ud;
	fprintf(stderr, "rdmx-perf: connection failed\n");
	s->failed = true;
}

static void on_disconnected(struct rdmx_conn *conn, void *conn_ud, void *ctx_ud)
{
	struct perf_session *s = ctx_ud;
	(void)conn_ud;
	if (conn == s->conn) {
		s->conn = NULL;
		s->disconnected = true;
	}
}

static int open_ctx(const struct perf_opts *o, const struct perf_task_conf *confs, size_t nconfs,
                    struct perf_session *s)
{
	int rc = rdmx_dev_open(o->device, &s->dev);
	if (rc == 0)
		rc = rdmx_pe_create(&s->pe);
	if (rc == 0)
		rc = rdmx_pe_set_poll_mode(s->pe, o->poll, 50);
	if (rc == 0)
		rc = rdmx_ctx_create(s->dev, s->pe, &s->ctx);
	if (rc == 0)
		rc = rdmx_ctx_set_user_data(s->ctx, s);
	if (rc == 0)
		rc = rdmx_ctx_set_conn_callbacks(s->ctx, on_request, on_established, on_failure,
		                                 on_disconnected);
	uint32_t depth = 0;
	for (size_t i = 0; rc == 0 && i < nconfs; i++) {
		rc = rdmx_ctx_set_task_conf(s->ctx, confs[i].type, confs[i].ok_cb, confs[i].err_cb,
		                            confs[i].num);
		if (confs[i].num > depth)
			depth = confs[i].num;
	}
	if (rc == 0 && o->mtu)
		rc = rdmx_ctx_set_mtu(s->ctx, o->mtu);
	if (rc == 0 && o->gid_index >= 0)
		rc = rdmx_ctx_set_gid_index(s->ctx, (uint32_t)o->gid_index);
	if (rc == 0 && o->inline_size) {
		struct rdmx_dev_caps caps;

		rc = rdmx_dev_query_caps(s->dev, &caps);
		if (rc == 0 && o->inline_size > caps.max_inline) {
			fprintf(stderr, "rdmx-perf: --inline_size %u is above %s's max_inline %u\n",
			        o->inline_size, rdmx_dev_name(s->dev), caps.max_inline);
			rc = RDMX_E_INVAL;
		}
		if (rc == 0)
			rc = rdmx_ctx_set_max_inline(s->ctx, o->inline_size);
	}
	if (rc == 0 && depth > 256) {
		rc = rdmx_ctx_set_send_queue_size(s->ctx, depth);
		if (rc == 0)
			rc = rdmx_ctx_set_recv_queue_size(s->ctx, depth);
	}
	return rc;
}

int perf_session_open(const struct perf_opts *o, struct perf_params *params, size_t buf_len,
                      unsigned access, const struct perf_task_conf *confs, size_t nconfs,
                      struct perf_session *s)
{
	struct rdmx_addr *addr = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	g_params = params;
	s->buf_len = buf_len;
	if (posix_memalign(&s->buf, 4096, buf_len ? buf_len : 8) != 0)
		return RDMX_E_NOMEM;
	memset(s->buf, 0, buf_len);
	rc = open_ctx(o, confs, nconfs, s);
	if (rc == 0)
		rc = rdmx_mr_reg(s->dev, s->buf, buf_len, access, &s->mr);
	if (rc == 0)
		rc = rdmx_ctx_start(s->ctx);
	if (rc) {
		fprintf(stderr, "rdmx-perf: set-up failed: %s\n", rdmx_strerror(rc));
		return rc;
	}
	perf_header(o, s);
	if (!o->server) {
		/* -a listens again for every size: the last size's listener may
		 * still hold the port for a moment (a loaded host); bounded */
		rc = rdmx_ctx_listen(s->ctx, o->port);
		for (int attempt = 0; rc == RDMX_E_EXISTS && attempt < 100; attempt++) {
			struct timespec pause = {0, 50 * 1000 * 1000};

			nanosleep(&pause, NULL);
			rc = rdmx_ctx_listen(s->ctx, o->port);
		}
		if (rc) {
			fprintf(stderr, "rdmx-perf: listen on port %u: %s\n", o->port,
			        rdmx_strerror(rc));
			return rc;
		}
		printf("rdmx-perf: %s server on %s port %u, waiting for a client\n", o->test,
		       rdmx_dev_name(s->dev), o->port);
		fflush(stdout);
		uint64_t guard = perf_now_ns();
		while (!s->established && !s->failed) {
			rc = rdmx_pe_wait(s->pe, 100);
			if (rc < 0)
				return rc;
			if (perf_now_ns() - guard > 10 * PERF_GUARD_NS)
				return RDMX_E_TIMEDOUT;
		}
		rdmx_ctx_stop_listen(s->ctx);
		return s->failed ? RDMX_E_CONN_REFUSED : 0;
	}
	struct perf_pd mine;
	memset(&mine, 0, sizeof(mine));
	rdmx_mr_get_descriptor(s->mr, mine.desc);
	mine.params = *params;
	enum rdmx_addr_type type = strchr(o->server, ':') ? RDMX_ADDR_IPV6 : RDMX_ADDR_IPV4;
	rc = rdmx_addr_create(type, o->server, o->port, &addr);
	/* the server may not be listening yet: retry refused connects, saying
	 * so once */
	for (int attempt = 0; rc == 0 && attempt < 300; attempt++) {
		struct rdmx_conn *conn;
		s->failed = false;
		rc = rdmx_ctx_connect_to_addr(s->ctx, addr, &mine, sizeof(mine), NULL, &conn);
		if (rc == 0)
			rc = perf_drive_until(s, RDMX_POLL_HYBRID, &s->established);
		if (rc == 0 || !s->failed)
			break;
		rc = 0;
		if (attempt == 0)
			fprintf(stderr,
			        "rdmx-perf: waiting for the server at %s port %u to be up\n",
			        o->server, o->port);
		struct timespec pause = {0, 100 * 1000 * 1000};
		nanosleep(&pause, NULL);
	}
	rdmx_addr_destroy(&addr);
	if (rc == 0 && !s->established)
		rc = RDMX_E_CONN_REFUSED;
	if (rc)
		fprintf(stderr, "rdmx-perf: connect to %s:%u: %s\n", o->server, o->port,
		        rdmx_strerror(rc));
	return rc;
}

void perf_session_close(struct perf_session *s)
{
	if (s->conn && !s->disconnected) {
		rdmx_conn_disconnect(s->conn);
		uint64_t start = perf_now_ns();
		while (!s->disconnected && perf_now_ns() - start < 2000000000ull)
			rdmx_pe_wait(s->pe, 10);
	}
	if (s->ctx) {
		rdmx_ctx_stop(s->ctx);
		rdmx_ctx_destroy(&s->ctx);
	}
	rdmx_mr_remote_delete(&s->remote);
	rdmx_mr_dereg(&s->mr);
	rdmx_pe_destroy(&s->pe);
	rdmx_dev_close(&s->dev);
	free(s->buf);
	s->buf = NULL;
}

/* ---- reporting (perftest's columns) ---- */

#define PERF_LINE                                                                                  \
	"---------------------------------------------------------------------------------------"  \
	"\n"

static bool is_lat(const char *test)
{
	size_t n = strlen(test);

	return n > 4 && strcmp(test + n - 4, "_lat") == 0;
}

void perf_header(const struct perf_opts *o, const struct perf_session *s)
{
	uint32_t mtu = 0, sq = 0, rq = 0, inl = 0;
	struct rdmx_dev_caps caps;

	memset(&caps, 0, sizeof(caps));
	rdmx_ctx_get_mtu(s->ctx, &mtu);
	rdmx_ctx_get_max_inline(s->ctx, &inl);
	rdmx_ctx_get_send_queue_size(s->ctx, &sq);
	rdmx_ctx_get_recv_queue_size(s->ctx, &rq);
	rdmx_dev_query_caps(s->dev, &caps);
	printf(PERF_LINE);
	printf("                    %s (rdmx-perf, %s)\n", o->test,
	       o->server ? "client" : "server");
	printf(" Device          : %s\t\tProvider       : %s\n", rdmx_dev_name(s->dev),
	       rdmx_dev_provider(s->dev));
	printf(" Connection type : RC\t\tUsing SRQ      : ON\n");
	printf(" TX depth        : %u\t\tRX depth       : %u\n", sq, rq);
	printf(" Mtu             : %u[B]\t\tMax msg size   : %llu[B]\n", mtu,
	       (unsigned long long)caps.max_message_size);
	printf(" Inline size     : %u[B]\t\tMax inline     : %u[B]\n", inl, caps.max_inline);
	printf(" Outstanding ops : %u\t\tPoll mode      : %s\n", o->inflight,
	       o->poll == RDMX_POLL_BUSY    ? "busy"
	       : o->poll == RDMX_POLL_BLOCK ? "block"
	                                    : "hybrid");
	printf(PERF_LINE);
	fflush(stdout);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double at(const double *sorted, uint64_t n, double q)
{
	return sorted[(uint64_t)((double)(n - 1) * q)];
}

void perf_report_as(const struct perf_opts *o, uint64_t size, double *samples_us, uint64_t n,
                    uint64_t ops, uint64_t bytes, double seconds)
{
	struct perf_opts ro = *o;

	ro.size = size;
	perf_report(&ro, samples_us, n, ops, bytes, seconds);
}

void perf_report(const struct perf_opts *o, double *samples_us, uint64_t n, uint64_t ops,
                 uint64_t bytes, double seconds)
{
	double tmin = NAN, tmax = NAN, typical = NAN, avg = NAN, sd = NAN, p99 = NAN, p999 = NAN;
	double mib_s = seconds > 0 ? (double)bytes / seconds / (1024.0 * 1024.0) : 0;
	double gbit_s = seconds > 0 ? (double)bytes * 8.0 / seconds / 1e9 : 0;
	double ops_s = seconds > 0 ? (double)ops / seconds : 0;

	if (samples_us && n > 0) {
		double sum = 0, var = 0;

		qsort(samples_us, n, sizeof(double), cmp_double);
		for (uint64_t i = 0; i < n; i++)
			sum += samples_us[i];
		avg = sum / (double)n;
		for (uint64_t i = 0; i < n; i++)
			var += (samples_us[i] - avg) * (samples_us[i] - avg);
		sd = sqrt(var / (double)n);
		tmin = samples_us[0];
		tmax = samples_us[n - 1];
		typical = samples_us[n / 2];
		p99 = at(samples_us, n, 0.99);
		p999 = at(samples_us, n, 0.999);
	}
	if (is_lat(o->test)) {
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
		       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   99.9%% "
		       "percentile[usec] \n");
		printf(" %-7llu %-10llu %-14.2f %-14.2f %-16.2f %-14.2f %-15.2f %-22.2f %-.2f\n",
		       (unsigned long long)o->size, (unsigned long long)ops, tmin, tmax, typical,
		       avg, sd, p99, p999);
	} else {
		/* the peak is over the whole run: rdmx-perf does not sample sub-intervals */
		const char *unit = o->report_gbits ? "Gb/sec" : "MB/sec";
		double bw = o->report_gbits ? gbit_s : mib_s;

		printf(" #bytes     #iterations    BW peak[%s]    BW average[%s]   "
		       "MsgRate[Mpps]\n",
		       unit, unit);
		printf(" %-10llu %-10llu     %-.2f            %-.2f               %-.6f\n",
		       (unsigned long long)o->size, (unsigned long long)ops, bw, bw, ops_s / 1e6);
	}
	printf(PERF_LINE);
	printf("RESULT test=%s size=%llu p50_us=%.2f p99_us=%.2f mib_s=%.2f ops_per_s=%.0f\n",
	       o->test, (unsigned long long)o->size, typical, p99, mib_s, ops_s);
	if (o->out_json)
		printf("{\"test\":\"%s\",\"bytes\":%llu,\"iterations\":%llu,\"t_min_usec\":%.3f,"
		       "\"t_max_usec\":%.3f,\"t_typical_usec\":%.3f,\"t_avg_usec\":%.3f,"
		       "\"t_stdev_usec\":%.3f,\"p99_usec\":%.3f,\"p99_9_usec\":%.3f,"
		       "\"bw_avg_mb_sec\":%.3f,\"bw_avg_gbit_sec\":%.3f,\"msg_rate_mpps\":%.6f}\n",
		       o->test, (unsigned long long)o->size, (unsigned long long)ops,
		       isnan(tmin) ? 0 : tmin, isnan(tmax) ? 0 : tmax, isnan(typical) ? 0 : typical,
		       isnan(avg) ? 0 : avg, isnan(sd) ? 0 : sd, isnan(p99) ? 0 : p99,
		       isnan(p999) ? 0 : p999, mib_s, gbit_s, ops_s / 1e6);
	fflush(stdout);
}
