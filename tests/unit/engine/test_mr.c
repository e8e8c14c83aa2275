/* Memory regions: registration checks, the descriptor wire format (exact
 * bytes, round trip, rejection of malformed input), remote regions. */
#include <string.h>

#include "helpers.h"
#include "internal.h"

static const uint8_t golden[RDMX_MR_DESCRIPTOR_SIZE] = {
    0x52, 0x58,                                     /* magic "RX" */
    0x01,                                           /* version */
    0x01,                                           /* provider tcp */
    0x06, 0x00, 0x00, 0x00,                         /* access */
    0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, /* address */
    0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* length 4096 */
    0xef, 0xbe, 0xad, 0xde,                         /* rkey */
    0x00, 0x00, 0x00, 0x00,                         /* reserved */
};

static struct rdmx_mr fake_mr(void)
{
	struct rdmx_mr mr;

	memset(&mr, 0, sizeof(mr));
	mr.addr = (void *)(uintptr_t)0x1122334455667788ull;
	mr.len = 4096;
	mr.access = RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_WRITE;
	mr.rkey = 0xdeadbeef;
	return mr;
}

Test(descriptor, encode_is_exact_little_endian)
{
	struct rdmx_mr mr = fake_mr();
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];

	memset(desc, 0xaa, sizeof(desc));
	rdmx__mr_descriptor_encode(&mr, RDMX_PROVIDER_ID_TCP, desc);
	cr_assert_arr_eq(desc, golden, sizeof(golden));
}

Test(descriptor, round_trip)
{
	struct rdmx_mr mr = fake_mr();
	struct rdmx_mr_remote *remote = NULL;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	unsigned access;
	size_t size;

	rdmx__mr_descriptor_encode(&mr, RDMX_PROVIDER_ID_VERBS, desc);
	assert_ok(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &remote));
	cr_assert_eq(remote->addr, 0x1122334455667788ull);
	cr_assert_eq(remote->len, 4096);
	cr_assert_eq(remote->rkey, 0xdeadbeef);
	cr_assert_eq(remote->provider, RDMX_PROVIDER_ID_VERBS);
	assert_ok(rdmx_mr_remote_get_size(remote, &size));
	cr_assert_eq(size, 4096);
	assert_ok(rdmx_mr_remote_get_access(remote, &access));
	cr_assert_eq(access, mr.access);
	assert_ok(rdmx_mr_remote_delete(&remote));
	cr_assert_null(remote);
	assert_ok(rdmx_mr_remote_delete(&remote));
	assert_ok(rdmx_mr_remote_delete(NULL));
}

/* Each mutation of a valid descriptor must be rejected, leaving *out alone. */
Test(descriptor, rejects_malformed)
{
	static const struct {
		size_t off;
		uint8_t val;
	} bad[] = {
	    {0, 0x53},  /* magic */
	    {1, 0x00},  /* magic */
	    {2, 0x00},  /* version 0 */
	    {2, 0x02},  /* version 2 */
	    {3, 0x00},  /* provider 0 */
	    {3, 0x03},  /* provider 3 */
	    {4, 0x10},  /* unknown access flag */
	    {7, 0x80},  /* unknown access flag */
	    {28, 0x01}, /* reserved */
	    {31, 0xff}, /* reserved */
	};
	struct rdmx_mr_remote *remote = (void *)0x1;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memcpy(desc, golden, sizeof(desc));
		desc[bad[i].off] = bad[i].val;
		assert_rc(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &remote),
		          RDMX_E_INVAL);
		cr_assert_eq(remote, (void *)0x1, "output written on failure (case %zu)", i);
	}
	/* zero length, wrapping range */
	memcpy(desc, golden, sizeof(desc));
	memset(desc + 16, 0, 8);
	assert_rc(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &remote), RDMX_E_INVAL);
	memcpy(desc, golden, sizeof(desc));
	memset(desc + 8, 0xff, 8);
	assert_rc(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &remote), RDMX_E_INVAL);
	/* sizes and NULLs */
	assert_rc(rdmx_mr_remote_from_descriptor(golden, 31, &remote), RDMX_E_INVAL);
	assert_rc(rdmx_mr_remote_from_descriptor(golden, 33, &remote), RDMX_E_INVAL);
	assert_rc(rdmx_mr_remote_from_descriptor(golden, 0, &remote), RDMX_E_INVAL);
	assert_rc(rdmx_mr_remote_from_descriptor(NULL, 32, &remote), RDMX_E_INVAL);
	assert_rc(rdmx_mr_remote_from_descriptor(golden, 32, NULL), RDMX_E_INVAL);
	cr_assert_eq(remote, (void *)0x1);
	/* and the golden one itself is fine */
	assert_ok(rdmx_mr_remote_from_descriptor(golden, sizeof(golden), &remote));
	assert_ok(rdmx_mr_remote_delete(&remote));
}

DEVICE_TEST(mr, reg_validates_and_counts_users)
{
	struct rdmx_dev *dev = NULL;
	struct rdmx_mr *mr = NULL, *untouched = (void *)0x1;
	char buf[256];
	void *ptr;
	size_t size;
	unsigned access;

	assert_ok(test_dev_open(devname, &dev));
	assert_rc(rdmx_mr_reg(NULL, buf, sizeof(buf), 0, &untouched), RDMX_E_INVAL);
	assert_rc(rdmx_mr_reg(dev, NULL, sizeof(buf), 0, &untouched), RDMX_E_INVAL);
	assert_rc(rdmx_mr_reg(dev, buf, 0, 0, &untouched), RDMX_E_INVAL);
	assert_rc(rdmx_mr_reg(dev, buf, sizeof(buf), 0x10, &untouched), RDMX_E_INVAL);
	assert_rc(rdmx_mr_reg(dev, buf, sizeof(buf), 0, NULL), RDMX_E_INVAL);
	cr_assert_eq(untouched, (void *)0x1);

	assert_ok(rdmx_mr_reg(dev, buf, sizeof(buf), RDMX_ACCESS_LOCAL_WRITE, &mr));
	assert_ok(rdmx_mr_get_ptr(mr, &ptr));
	cr_assert_eq(ptr, buf);
	assert_ok(rdmx_mr_get_size(mr, &size));
	cr_assert_eq(size, sizeof(buf));
	assert_ok(rdmx_mr_get_access(mr, &access));
	cr_assert_eq(access, RDMX_ACCESS_LOCAL_WRITE);
	assert_ok(rdmx_mr_get_descriptor_size(mr, &size));
	cr_assert_eq(size, RDMX_MR_DESCRIPTOR_SIZE);
	assert_rc(rdmx_mr_get_ptr(NULL, &ptr), RDMX_E_INVAL);
	assert_rc(rdmx_mr_get_descriptor(mr, NULL), RDMX_E_INVAL);

	/* a device with a region cannot close */
	assert_rc(rdmx_dev_close(&dev), RDMX_E_BAD_STATE);
	cr_assert_not_null(dev);
	assert_ok(rdmx_mr_dereg(&mr));
	cr_assert_null(mr);
	assert_ok(rdmx_mr_dereg(&mr));
	assert_ok(rdmx_mr_dereg(NULL));
	assert_ok(rdmx_dev_close(&dev));
	cr_assert_null(dev);
	assert_ok(rdmx_dev_close(&dev));
	assert_ok(rdmx_dev_close(NULL));
}

DEVICE_TEST(mr, descriptor_of_a_region_decodes_back)
{
	struct rdmx_dev *dev = NULL;
	struct rdmx_mr *mr = NULL;
	struct rdmx_mr_remote *remote = NULL;
	uint8_t desc[RDMX_MR_DESCRIPTOR_SIZE];
	static char buf[4096];
	unsigned access = RDMX_ACCESS_REMOTE_READ | RDMX_ACCESS_REMOTE_ATOMIC;

	assert_ok(test_dev_open(devname, &dev));
	assert_ok(rdmx_mr_reg(dev, buf, sizeof(buf), access, &mr));
	assert_ok(rdmx_mr_get_descriptor(mr, desc));
	assert_ok(rdmx_mr_remote_from_descriptor(desc, sizeof(desc), &remote));
	cr_assert_eq(remote->addr, (uint64_t)(uintptr_t)buf);
	cr_assert_eq(remote->len, sizeof(buf));
	cr_assert_eq(remote->access, access);
	cr_assert_eq(remote->rkey, mr->rkey);
	cr_assert_eq(remote->provider, dev->ops->id);
	assert_ok(rdmx_mr_remote_delete(&remote));
	assert_ok(rdmx_mr_dereg(&mr));
	assert_ok(rdmx_dev_close(&dev));
}
