/* rdmx umbrella header: the engine, the channel and RPC. TLS, bootstrap and
 * the libev adapter have their own headers (tls.h, bootstrap.h, ev.h). */
#ifndef RDMX_RDMX_H
#define RDMX_RDMX_H

#include <rdmx/version.h>
#include <rdmx/status.h>
#include <rdmx/log.h>
#include <rdmx/dev.h>
#include <rdmx/mr.h>
#include <rdmx/pe.h>
#include <rdmx/task.h>
#include <rdmx/ctx.h>
#include <rdmx/sync_event.h>
#if defined(__has_include)
#if __has_include(<rdmx/channel.h>)
#include <rdmx/channel.h>
#include <rdmx/rpc.h>
#include <rdmx/rpc_stream.h>
#endif
#endif

#endif
