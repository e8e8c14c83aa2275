/* Readiness for systemd (Type=notify units, dist/systemd/): a service sends
 * READY=1 once it accepts clients and STOPPING=1 when it begins to stop.
 * Built with libsystemd (RDMX_HAVE_SYSTEMD, set by CMake when libsystemd is
 * found) the state goes to $NOTIFY_SOCKET through sd_notify(3); without
 * NOTIFY_SOCKET (not started by systemd) sd_notify does nothing. Built
 * without libsystemd the call does nothing at all. */
#ifndef RDMX_SERVICES_SD_NOTIFY_H
#define RDMX_SERVICES_SD_NOTIFY_H

#ifdef RDMX_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

/* state: a newline-separated list of VAR=value assignments, e.g. "READY=1". */
static inline void rdmx__svc_notify(const char *state)
{
#ifdef RDMX_HAVE_SYSTEMD
	(void)sd_notify(0, state);
#else
	(void)state;
#endif
}

#endif
