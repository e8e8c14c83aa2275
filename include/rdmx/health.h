/* rdmx health checks: every RPC server answers rdmx.health.v1.Health/Check
 * and rdmx.health.v1.Health/Watch.
 *
 * rdmx_rpc_server_create registers the method on every server (the IDL is
 * rpc/idl/health.proto, also served by reflection, include/rdmx/reflection.h),
 * so any client, `rdmx-call ADDR rdmx.health.v1.Health/Check '{}'` included,
 * can ask a server how it is. The answer:
 *   service ""                      -> the server's overall status (SERVING
 *                                      unless set otherwise)
 *   a service with methods on the   -> its status (SERVING unless set)
 *   server, or one given a status
 *   anything else                   -> RPC status NOT_FOUND
 * Request and response use the codec's wire format (include/rdmx/codec.h):
 * HealthCheckRequest {1: service string}, HealthCheckResponse {1: status enum}.
 *
 * Threading: like rdmx_rpc_server_register — set statuses before the server
 * is serving, or from the thread that drives the endpoints using it. */
#ifndef RDMX_HEALTH_H
#define RDMX_HEALTH_H

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_rpc_server;

#define RDMX_HEALTH_CHECK_NAME "rdmx.health.v1.Health/Check"
/* Server-streaming (rdmx/rpc_stream.h): the status of the requested service
 * at once, then each change made with rdmx_rpc_server_set_health, until the
 * caller cancels; an unknown service is reported SERVICE_UNKNOWN and stays
 * watched. A watcher that does not read gets the latest status when it
 * reads again (intermediate ones may be skipped). */
#define RDMX_HEALTH_WATCH_NAME "rdmx.health.v1.Health/Watch"

/* rdmx.health.v1.HealthCheckResponse.ServingStatus */
enum rdmx_health_status {
	RDMX_HEALTH_UNKNOWN = 0,
	RDMX_HEALTH_SERVING = 1,
	RDMX_HEALTH_NOT_SERVING = 2,
	RDMX_HEALTH_SERVICE_UNKNOWN = 3,
};

/* Sets the status reported for `service` ("" or NULL: the whole server), e.g.
 * NOT_SERVING while draining. `service` is copied.
 * Errors: RDMX_E_INVAL (status out of range, service longer than 255 bytes),
 * RDMX_E_NOMEM. */
int rdmx_rpc_server_set_health(struct rdmx_rpc_server *server, const char *service,
                               enum rdmx_health_status status);

#ifdef __cplusplus
}
#endif
#endif
