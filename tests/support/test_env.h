/* Which devices and addresses a battery runs on, from the environment:
 * RDMX_TEST_DEVICE / RDMX_TEST_PEER_DEVICE (default "tcp") and
 * RDMX_TEST_ADDR / RDMX_TEST_PEER_ADDR. Shared by the conformance, channel,
 * RPC and codegen suites. */
#ifndef RDMX_TEST_ENV_H
#define RDMX_TEST_ENV_H

/* 0: RDMX_TEST_DEVICE, 1: RDMX_TEST_PEER_DEVICE (else the first), "tcp" by default. */
const char *env_device(int which);
/* RDMX_TEST_ADDR / RDMX_TEST_PEER_ADDR, NULL when unset or empty. */
const char *env_addr_raw(int which);
/* env_addr_raw, or "127.0.0.1". */
const char *env_addr(int which);

#endif
