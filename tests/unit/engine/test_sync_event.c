/* Sync events: the local word, its descriptor, bounded waits. */
#include <pthread.h>
#include <string.h>

#include "helpers.h"
#include "internal.h"

DEVICE_TEST(sync_event, value_and_descriptor)
{
	struct rdmx_dev *dev = NULL;
	struct rdmx_sync_event *ev = NULL, *none = (void *)0x1;
	struct rdmx_mr_remote *remote = NULL;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	uint64_t v = 0;

	assert_ok(test_dev_open(devname, &dev));
	assert_rc(rdmx_sync_event_create(NULL, 0, &none), RDMX_E_INVAL);
	assert_rc(rdmx_sync_event_create(dev, 0, NULL), RDMX_E_INVAL);
	cr_assert_eq(none, (void *)0x1);
	assert_ok(rdmx_sync_event_create(dev, 41, &ev));
	assert_ok(rdmx_sync_event_get_value(ev, &v));
	cr_assert_eq(v, 41);
	assert_ok(rdmx_sync_event_set_value(ev, 1ull << 40));
	assert_ok(rdmx_sync_event_get_value(ev, &v));
	cr_assert_eq(v, 1ull << 40);
	assert_rc(rdmx_sync_event_get_value(ev, NULL), RDMX_E_INVAL);
	assert_rc(rdmx_sync_event_set_value(NULL, 1), RDMX_E_INVAL);

	/* the descriptor exposes one aligned word with remote read/write/atomic */
	assert_ok(rdmx_sync_event_get_descriptor(ev, desc));
	assert_ok(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &remote));
	cr_assert_eq(remote->len, 8);
	cr_assert_eq(remote->addr % 8, 0);
	cr_assert_eq(
	    remote->access &
	        (RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_ATOMIC),
	    RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE | RDMX_ACCESS_REMOTE_ATOMIC);
	assert_ok(rdmx_mr_remote_delete(&remote));
	assert_rc(rdmx_sync_event_get_descriptor(ev, NULL), RDMX_E_INVAL);

	/* the event holds the device */
	assert_rc(rdmx_dev_close(&dev), RDMX_E_BAD_STATE);
	assert_ok(rdmx_sync_event_destroy(&ev));
	cr_assert_null(ev);
	assert_ok(rdmx_sync_event_destroy(&ev));
	assert_ok(rdmx_sync_event_destroy(NULL));
	assert_ok(rdmx_dev_close(&dev));
}

struct setter_arg {
	struct rdmx_sync_event *ev;
};

static void *late_setter(void *p)
{
	struct setter_arg *a = p;

	for (uint64_t v = 1; v <= 5; v++)
		rdmx_sync_event_set_value(a->ev, v);
	return NULL;
}

DEVICE_TEST(sync_event, wait_ge)
{
	struct rdmx_dev *dev = NULL;
	struct rdmx_pe *pe = NULL;
	struct rdmx_sync_event *ev = NULL;
	struct setter_arg arg;
	pthread_t th;

	assert_ok(test_dev_open(devname, &dev));
	assert_ok(rdmx_pe_create(&pe));
	assert_ok(rdmx_sync_event_create(dev, 3, &ev));
	assert_ok(rdmx_sync_event_wait_ge(ev, 3, NULL, 0));
	assert_ok(rdmx_sync_event_wait_ge(ev, 2, pe, -1));
	assert_rc(rdmx_sync_event_wait_ge(ev, 4, NULL, 0), RDMX_E_TIMEDOUT);
	assert_rc(rdmx_sync_event_wait_ge(ev, 4, pe, 5), RDMX_E_TIMEDOUT);
	assert_rc(rdmx_sync_event_wait_ge(NULL, 4, pe, 5), RDMX_E_INVAL);
	assert_rc(rdmx_sync_event_wait_ge(ev, 4, pe, -7), RDMX_E_INVAL);

	/* another thread moves the word: the wait sees it (generous guard) */
	assert_ok(rdmx_sync_event_set_value(ev, 0));
	arg.ev = ev;
	cr_assert_eq(pthread_create(&th, NULL, late_setter, &arg), 0);
	assert_ok(rdmx_sync_event_wait_ge(ev, 5, pe, 30000));
	pthread_join(th, NULL);

	assert_ok(rdmx_sync_event_destroy(&ev));
	assert_ok(rdmx_pe_destroy(&pe));
	assert_ok(rdmx_dev_close(&dev));
}
