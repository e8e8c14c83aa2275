/* Devices: listing, opening by name / default / address, caps, gid, names. */
#include <string.h>

#include "helpers.h"

#include <criterion/redirect.h>

Test(dev, list_ends_with_tcp)
{
	struct rdmx_dev_info infos[16];
	size_t count = 0, count2 = 0;

	assert_ok(rdmx_dev_list(NULL, 0, &count));
	cr_assert_geq(count, 1);
	assert_ok(rdmx_dev_list(infos, 16, &count2));
	cr_assert_eq(count2, count);
	cr_assert_leq(count, 16);
	cr_assert_str_eq(infos[count - 1].name, "tcp");
	cr_assert_str_eq(infos[count - 1].provider, "tcp");
	for (size_t i = 0; i + 1 < count; i++)
		cr_assert_str_eq(infos[i].provider, "verbs", "device %s listed before tcp",
		                 infos[i].name);
	assert_rc(rdmx_dev_list(NULL, 1, &count), RDMX_E_INVAL);
	assert_rc(rdmx_dev_list(infos, 1, NULL), RDMX_E_INVAL);
	/* a short array still reports the total */
	assert_ok(rdmx_dev_list(infos, 1, &count2));
	cr_assert_eq(count2, count);
}

Test(dev, open_tcp_by_name)
{
	struct rdmx_dev *dev = NULL;
	struct rdmx_dev_caps caps;
	uint8_t gid[16];

	assert_ok(rdmx_dev_open("tcp", &dev));
	cr_assert_str_eq(rdmx_dev_provider(dev), "tcp");
	cr_assert_str_eq(rdmx_dev_name(dev), "tcp");
	assert_ok(rdmx_dev_query_caps(dev, &caps));
	cr_assert_gt(caps.max_send_queue_size, 0);
	cr_assert_gt(caps.max_recv_queue_size, 0);
	cr_assert_gt(caps.max_buf_list_len, 0);
	cr_assert_gt(caps.max_message_size, 0);
	cr_assert_geq(caps.gid_table_len, 1);
	cr_assert(caps.transport_types & RDMX_TRANSPORT_RC);
	assert_ok(rdmx_dev_get_gid(dev, 0, gid));
	assert_rc(rdmx_dev_get_gid(dev, caps.gid_table_len, gid), RDMX_E_INVAL);
	assert_rc(rdmx_dev_query_caps(dev, NULL), RDMX_E_INVAL);
	assert_rc(rdmx_dev_query_caps(NULL, &caps), RDMX_E_INVAL);
	cr_assert_null(rdmx_dev_provider(NULL));
	cr_assert_null(rdmx_dev_name(NULL));
	assert_ok(rdmx_dev_close(&dev));
}

Test(dev, open_unknown_names)
{
	struct rdmx_dev *dev = (void *)0x1;
	char longname[100];

	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	assert_rc(rdmx_dev_open("nosuchdev0", &dev), RDMX_E_NO_DEVICE);
	assert_rc(rdmx_dev_open("", &dev), RDMX_E_INVAL);
	assert_rc(rdmx_dev_open(longname, &dev), RDMX_E_INVAL);
	assert_rc(rdmx_dev_open("tcp", NULL), RDMX_E_INVAL);
	cr_assert_eq(dev, (void *)0x1);
}

Test(dev, default_honours_environment)
{
	struct rdmx_dev *dev = NULL;

	setenv("RDMX_DEVICE", "tcp", 1);
	assert_ok(rdmx_dev_open(NULL, &dev));
	cr_assert_str_eq(rdmx_dev_name(dev), "tcp");
	assert_ok(rdmx_dev_close(&dev));
	setenv("RDMX_DEVICE", "nosuchdev0", 1);
	assert_rc(rdmx_dev_open(NULL, &dev), RDMX_E_NO_DEVICE);
}

Test(dev, default_without_environment)
{
	struct rdmx_dev_info infos[16];
	struct rdmx_dev *dev = NULL;
	size_t count;

	unsetenv("RDMX_DEVICE");
	assert_ok(rdmx_dev_list(infos, 16, &count));
	assert_ok(rdmx_dev_open(NULL, &dev));
	cr_assert_str_eq(rdmx_dev_name(dev), infos[0].name, "default is the first listed device");
	assert_ok(rdmx_dev_close(&dev));
}

Test(dev, open_by_addr)
{
	struct rdmx_dev *dev = (void *)0x1;

	assert_rc(rdmx_dev_open_by_addr("not-an-ip", &dev), RDMX_E_INVAL);
	assert_rc(rdmx_dev_open_by_addr(NULL, &dev), RDMX_E_INVAL);
	assert_rc(rdmx_dev_open_by_addr("127.0.0.1", NULL), RDMX_E_INVAL);
	/* TEST-NET-2: never a local address */
	assert_rc(rdmx_dev_open_by_addr("198.51.100.77", &dev), RDMX_E_NO_DEVICE);
	cr_assert_eq(dev, (void *)0x1);
	dev = NULL;
	assert_ok(rdmx_dev_open_by_addr("127.0.0.1", &dev));
	cr_assert_not_null(rdmx_dev_provider(dev));
	assert_ok(rdmx_dev_close(&dev));
}

Test(dev, test_seam_rejects_incomplete_ops)
{
	struct rdmx_provider_ops ops = mock_ops;
	struct rdmx_dev *dev = (void *)0x1;

	ops.post_send = NULL;
	cr_redirect_stderr();
	assert_rc(rdmx__dev_open_ops(&ops, "mock0", &dev), RDMX_E_INVAL);
	cr_assert_eq(dev, (void *)0x1);
}
