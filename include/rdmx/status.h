/* rdmx status codes: 0 is success, every error is negative and never renumbered.
 * One list (RDMX_STATUS_LIST) makes the enum, rdmx_strerror() and rdmx_err_name(). */
#ifndef RDMX_STATUS_H
#define RDMX_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, VALUE, TEXT) */
#define RDMX_STATUS_LIST(X)                                                                        \
	X(OK, 0, "success")                                                                        \
	X(E_INVAL, -1, "invalid argument")                                                         \
	X(E_NOMEM, -2, "out of memory")                                                            \
	X(E_BAD_STATE, -3, "call not valid in the object's current state")                         \
	X(E_FULL, -4, "pool or table full")                                                        \
	X(E_NOT_SUPPORTED, -5, "operation not supported by this device")                           \
	X(E_PROVIDER, -6, "system or rdma-core call failed (errno logged)")                        \
	X(E_NO_DEVICE, -7, "no such device")                                                       \
	X(E_REMOTE_ACCESS, -8, "remote access violation (key, bounds or permission)")              \
	X(E_CONN_ABORTED, -9, "connection in error state: task flushed")                           \
	X(E_RNR, -10, "receiver not ready: retries exhausted")                                     \
	X(E_CONN_REFUSED, -11, "connection refused or rejected by the peer")                       \
	X(E_TIMEDOUT, -12, "timed out")                                                            \
	X(E_AGAIN, -13, "resource temporarily unavailable: try again")                             \
	X(E_DISCONNECTED, -14, "connection closed")                                                \
	X(E_CANCELED, -15, "canceled by a local stop")                                             \
	X(E_PROTOCOL, -16, "peer violated the wire protocol")                                      \
	X(E_AUTH, -17, "authentication failed")                                                    \
	X(E_TOO_BIG, -18, "message or buffer too large")                                           \
	X(E_NOT_FOUND, -19, "not found")                                                           \
	X(E_REMOTE_OP, -20, "remote operation failed")                                             \
	X(E_LOCAL_LENGTH, -21, "local buffer too small for the data")                              \
	X(E_EXISTS, -22, "already exists")                                                         \
	X(E_INSECURE_KEY, -23, "private key readable by group or others")

enum rdmx_status {
#define RDMX__STATUS_ENUM(name, value, text) RDMX_##name = (value),
	RDMX_STATUS_LIST(RDMX__STATUS_ENUM)
#undef RDMX__STATUS_ENUM
};

/* Human text of a status code ("unknown error" for codes not in the list). */
const char *rdmx_strerror(int status);

/* Symbolic name of a status code without the prefix, e.g. "E_INVAL", "OK";
 * "UNKNOWN" for codes not in the list. */
const char *rdmx_err_name(int status);

#ifdef __cplusplus
}
#endif
#endif
