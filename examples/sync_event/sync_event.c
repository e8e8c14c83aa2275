/* sync_event: a remote counter.
 *
 * The child owns a sync event (a 64-bit word in registered memory) and waits
 * until it reaches 10. The parent adds 1 to it ten times with
 * notify_add tasks (remote fetch-and-add), sets it to 100 with notify_set
 * (remote atomic write), and reads it back with a sync_event_get task.
 *   sync_event [-d DEVICE] */
#include <rdmx/rdmx.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../common/two_procs.h"

#define CHECK(expr)                                                                                \
	do {                                                                                       \
		int rc_ = (expr);                                                                  \
		if (rc_) {                                                                         \
			fprintf(stderr, "sync_event: %s: %s\n", #expr, rdmx_strerror(rc_));        \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

struct blob {
	size_t details_len;
	unsigned char details[256];
	unsigned char desc[RDMX_MR_DESCRIPTOR_SIZE];
};

static const char *device;
static int completed;

static void on_ok(struct rdmx_task *t, void *tud, void *ud)
{
	(void)t, (void)tud, (void)ud;
	completed++;
}

static void on_fail(struct rdmx_task *t, void *tud, void *ud)
{
	(void)tud, (void)ud;
	fprintf(stderr, "sync_event: task failed: %s\n", rdmx_strerror(rdmx_task_get_status(t)));
	exit(1);
}

static void setup(struct rdmx_dev **dev, struct rdmx_pe **pe, struct rdmx_ctx **ctx,
                  struct rdmx_conn **conn, struct blob *mine)
{
	const void *details;
	CHECK(rdmx_dev_open(device, dev));
	CHECK(rdmx_pe_create(pe));
	CHECK(rdmx_ctx_create(*dev, *pe, ctx));
	CHECK(rdmx_ctx_set_task_conf(*ctx, RDMX_TASK_SYNC_EVENT_NOTIFY_ADD, on_ok, on_fail, 1));
	CHECK(rdmx_ctx_set_task_conf(*ctx, RDMX_TASK_SYNC_EVENT_NOTIFY_SET, on_ok, on_fail, 1));
	CHECK(rdmx_ctx_set_task_conf(*ctx, RDMX_TASK_SYNC_EVENT_GET, on_ok, on_fail, 1));
	CHECK(rdmx_ctx_start(*ctx));
	CHECK(rdmx_ctx_export(*ctx, &details, &mine->details_len, conn));
	memcpy(mine->details, details, mine->details_len);
}

static void swap_blobs(int fd, const struct blob *mine, struct blob *peer)
{
	if (write(fd, mine, sizeof(*mine)) != (ssize_t)sizeof(*mine) ||
	    read(fd, peer, sizeof(*peer)) != (ssize_t)sizeof(*peer))
		exit(1);
}

static void teardown(struct rdmx_dev *dev, struct rdmx_pe *pe, struct rdmx_ctx *ctx)
{
	CHECK(rdmx_ctx_stop(ctx));
	CHECK(rdmx_ctx_destroy(&ctx));
	CHECK(rdmx_pe_destroy(&pe));
	CHECK(rdmx_dev_close(&dev));
}

static int owner(int fd)
{
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	struct rdmx_sync_event *ev;
	struct blob mine = {0}, peer;
	setup(&dev, &pe, &ctx, &conn, &mine);
	CHECK(rdmx_sync_event_create(dev, 0, &ev));
	CHECK(rdmx_sync_event_get_descriptor(ev, mine.desc));
	swap_blobs(fd, &mine, &peer);
	CHECK(rdmx_ctx_connect(ctx, peer.details, peer.details_len, conn));
	CHECK(rdmx_sync_event_wait_ge(ev, 10, pe, 30000));
	printf("sync_event: owner saw the counter reach 10\n");
	char done;
	if (read(fd, &done, 1) != 1)
		return 1;
	uint64_t v;
	CHECK(rdmx_sync_event_get_value(ev, &v));
	printf("sync_event: owner's final value %llu\n", (unsigned long long)v);
	CHECK(rdmx_sync_event_destroy(&ev));
	teardown(dev, pe, ctx);
	return v != 100;
}

static void run_task(struct rdmx_pe *pe, struct rdmx_task *t)
{
	int before = completed;
	CHECK(rdmx_task_submit(t));
	while (completed == before)
		if (rdmx_pe_progress(pe) < 0)
			exit(1);
}

static int notifier(int fd)
{
	struct rdmx_dev *dev;
	struct rdmx_pe *pe;
	struct rdmx_ctx *ctx;
	struct rdmx_conn *conn;
	struct rdmx_mr *mr;
	struct rdmx_mr_remote *event;
	struct rdmx_task *add, *set, *get;
	struct blob mine = {0}, peer;
	uint64_t *result = aligned_alloc(8, 8);
	setup(&dev, &pe, &ctx, &conn, &mine);
	CHECK(rdmx_mr_reg(dev, result, 8, RDMX_ACCESS_LOCAL_WRITE, &mr));
	swap_blobs(fd, &mine, &peer);
	CHECK(rdmx_ctx_connect(ctx, peer.details, peer.details_len, conn));
	CHECK(rdmx_mr_remote_from_descriptor(peer.desc, sizeof(peer.desc), &event));
	struct rdmx_buf res = {mr, result, 8, NULL};
	CHECK(rdmx_task_sync_event_notify_add_alloc(ctx, conn, event, 1, &res, NULL, &add));
	for (int i = 0; i < 10; i++)
		run_task(pe, add); /* the same task, resubmitted */
	printf("sync_event: value before the last add was %llu\n", (unsigned long long)*result);
	CHECK(rdmx_task_sync_event_notify_set_alloc(ctx, conn, event, 100, NULL, &set));
	run_task(pe, set);
	CHECK(rdmx_task_sync_event_get_alloc(ctx, conn, event, &res, NULL, &get));
	run_task(pe, get);
	printf("sync_event: remote value read back: %llu\n", (unsigned long long)*result);
	int bad = *result != 100;
	if (write(fd, "x", 1) != 1)
		return 1;
	CHECK(rdmx_task_free(add));
	CHECK(rdmx_task_free(set));
	CHECK(rdmx_task_free(get));
	CHECK(rdmx_mr_remote_delete(&event));
	CHECK(rdmx_mr_dereg(&mr));
	teardown(dev, pe, ctx);
	free(result);
	return bad;
}

int main(int argc, char **argv)
{
	return example_two_procs(argc, argv, "sync_event", &device, owner, notifier);
}
