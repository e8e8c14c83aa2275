/* bulk_read: one-sided RDMA read of a remote region.
 *
 * The child process owns a 4 MiB region (registered REMOTE_READ only) and
 * never touches it again: the device answers the reads, as a NIC does. The
 * parent reads it in 64 KiB chunks, 8 in flight, and checks every byte.
 * Connection details and the region's descriptor are exchanged over a
 * socketpair here; across machines use rdmx's mutual-TLS bootstrap, because
 * they grant access to memory.
 *   bulk_read [-d DEVICE] */
#include <rdmx/rdmx.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../common/two_procs.h"

#define REGION (4u << 20)
#define CHUNK (64u << 10)
#define INFLIGHT 8

#define CHECK(expr)                                                                                \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		if (rc_) {                                                                         \
			fprintf(stderr, "bulk_read: %s: %s\n", #expr, rdmx_strerror(rc_));         \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

struct blob { /* what each side tells the other */
	size_t details_len;
	unsigned char details[256];
	unsigned char desc[RDMX_MR_DESCRIPTOR_SIZE];
};

static const char *device;
static unsigned long done_reads, failed_reads;

static void on_read(struct rdmx_task *t, void *tud, void *ud)
{
	(void)t, (void)tud, (void)ud;
	done_reads++;
}

static void on_fail(struct rdmx_task *t, void *tud, void *ud)
{
	(void)tud, (void)ud;
	fprintf(stderr, "bulk_read: read failed: %s\n", rdmx_strerror(rdmx_task_get_status(t)));
	failed_reads++;
}

/* Opens a device, a progress engine and a started context; exports details. */
static void setup(struct rdmx_dev **dev, struct rdmx_pe **pe, struct rdmx_ctx **ctx,
                  struct rdmx_conn **conn, struct blob *mine)
{
	const void *details;
	CHECK(rdmx_dev_open(device, dev));
	CHECK(rdmx_pe_create(pe));
	CHECK(rdmx_ctx_create(*dev, *pe, ctx));
	CHECK(rdmx_ctx_set_task_conf(*ctx, RDMX_TASK_READ, on_read, on_fail, INFLIGHT));
	CHECK(rdmx_ctx_start(*ctx));
	CHECK(rdmx_ctx_export(*ctx, &details, &mine->details_len, conn));
	memcpy(mine->details, details, mine->details_len);
}

static void swap_blobs(int fd, const struct blob *mine, struct blob *peer)
{
	if (write(fd, mine, sizeof(*mine)) != (ssize_t)sizeof(*mine) ||
	    read(fd, peer, sizeof(*peer)) != (ssize_t)sizeof(*peer)) {
		perror("bulk_read: exchange");
		exit(1);
	}
}

static int owner(int fd)
{
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	struct rdmx_mr *mr;
	struct blob mine = {0}, peer;
	unsigned char *region = malloc(REGION);
	for (size_t i = 0; i < REGION; i++)
		region[i] = (unsigned char)(i * 7 + 3);
	setup(&dev, &pe, &ctx, &conn, &mine);
	CHECK(rdmx_mr_reg(dev, region, REGION, RDMX_ACCESS_REMOTE_READ, &mr)); /* least privilege */
	CHECK(rdmx_mr_get_descriptor(mr, mine.desc));
	swap_blobs(fd, &mine, &peer);
	CHECK(rdmx_ctx_connect(ctx, peer.details, peer.details_len, conn));
	char done;
	if (read(fd, &done, 1) != 1) /* wait for the reader, without calling progress */
		return 1;
	CHECK(rdmx_ctx_stop(ctx));
	CHECK(rdmx_ctx_destroy(&ctx));
	CHECK(rdmx_mr_dereg(&mr));
	CHECK(rdmx_pe_destroy(&pe));
	CHECK(rdmx_dev_close(&dev));
	free(region);
	return 0;
}

static int reader(int fd)
{
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	struct rdmx_mr *mr;
	struct rdmx_mr_remote *remote;
	struct rdmx_task *tasks[INFLIGHT];
	struct rdmx_buf dst[INFLIGHT];
	struct rdmx_rbuf src[INFLIGHT];
	struct blob mine = {0}, peer;
	unsigned char *copy = calloc(1, REGION);
	setup(&dev, &pe, &ctx, &conn, &mine);
	CHECK(rdmx_mr_reg(dev, copy, REGION, RDMX_ACCESS_LOCAL_WRITE, &mr));
	swap_blobs(fd, &mine, &peer);
	CHECK(rdmx_ctx_connect(ctx, peer.details, peer.details_len, conn));
	CHECK(rdmx_mr_remote_from_descriptor(peer.desc, sizeof(peer.desc), &remote));

	uint64_t t0 = rdmx_pe_now_ns(); /* the engine's monotonic clock */
	unsigned long next = 0, chunks = REGION / CHUNK;
	for (int i = 0; i < INFLIGHT; i++, next++) {
		src[i] = (struct rdmx_rbuf){remote, next * CHUNK, CHUNK};
		dst[i] = (struct rdmx_buf){mr, copy + next * CHUNK, CHUNK, NULL};
		CHECK(rdmx_task_read_alloc(ctx, conn, &src[i], &dst[i], NULL, &tasks[i]));
		CHECK(rdmx_task_submit(tasks[i]));
	}
	while (done_reads + failed_reads < chunks) {
		if (rdmx_pe_progress(pe) < 0)
			return 1;
		for (int i = 0; i < INFLIGHT && next < chunks; i++) {
			if (rdmx_task_get_status(tasks[i]) == RDMX_E_AGAIN)
				continue; /* still in flight */
			/* reuse the completed task for the next chunk: no allocation */
			src[i].offset = next * CHUNK;
			dst[i].addr = copy + next * CHUNK;
			CHECK(rdmx_task_set_remote(tasks[i], &src[i]));
			CHECK(rdmx_task_submit(tasks[i]));
			next++;
		}
	}
	uint64_t t1 = rdmx_pe_now_ns();
	size_t bad = 0;
	for (size_t i = 0; i < REGION; i++)
		bad += copy[i] != (unsigned char)(i * 7 + 3);
	double secs = (double)(t1 - t0) / 1e9;
	printf("bulk_read: read %u KiB in %lu reads of %u KiB, %zu bad bytes, %.1f MiB/s\n",
	       REGION >> 10, chunks, CHUNK >> 10, bad, (double)REGION / secs / 1048576.0);
	if (write(fd, "x", 1) != 1)
		return 1;
	for (int i = 0; i < INFLIGHT; i++)
		CHECK(rdmx_task_free(tasks[i]));
	CHECK(rdmx_ctx_stop(ctx));
	CHECK(rdmx_ctx_destroy(&ctx));
	CHECK(rdmx_mr_remote_delete(&remote));
	CHECK(rdmx_mr_dereg(&mr));
	CHECK(rdmx_pe_destroy(&pe));
	CHECK(rdmx_dev_close(&dev));
	free(copy);
	return bad != 0 || failed_reads != 0;
}

int main(int argc, char **argv)
{
	return example_two_procs(argc, argv, "bulk_read", &device, owner, reader);
}
