/* The one log header of every layer below the programs: a line goes to
 * rdmx__log (engine/log.c: threshold, user sink, default stderr) with its
 * file, line and function. The _ERRNO forms append ": <strerror(errno)>" so
 * that a failed system call is logged where it happened, once, with its
 * cause (STYLE.md). Lines are lower case; no secrets ever. */
#ifndef RDMX_COMMON_LOG_H
#define RDMX_COMMON_LOG_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <rdmx/log.h>

#define RDMX_LOG(level, ...) rdmx__log(RDMX_LOG_##level, __FILE__, __LINE__, __func__, __VA_ARGS__)
#define RDMX_ERR(...) RDMX_LOG(ERROR, __VA_ARGS__)
#define RDMX_WARN(...) RDMX_LOG(WARNING, __VA_ARGS__)
#define RDMX_INFO(...) RDMX_LOG(INFO, __VA_ARGS__)
#define RDMX_DBG(...) RDMX_LOG(DEBUG, __VA_ARGS__)

/* RDMX_ERR_ERRNO("epoll_ctl add fd %d failed", fd): errno is read at once,
 * before any argument could change it. */
#define RDMX_LOG_ERRNO(level, fmt, ...)                                                            \
	do {                                                                                       \
		int rdmx_errno_ = errno;                                                           \
		RDMX_LOG(level, fmt ": %s", ##__VA_ARGS__, strerror(rdmx_errno_));                 \
	} while (0)
#define RDMX_ERR_ERRNO(fmt, ...) RDMX_LOG_ERRNO(ERROR, fmt, ##__VA_ARGS__)
#define RDMX_WARN_ERRNO(fmt, ...) RDMX_LOG_ERRNO(WARNING, fmt, ##__VA_ARGS__)

/* Text a peer sent, made fit for a log line (common/log.c): printable
 * ASCII as is, a backslash doubled, every other byte as \xNN, so that no
 * control character can end the line, forge another or restyle a terminal.
 * Writes out[out_len], always NUL-terminated: all of it, or as many whole
 * escapes as fit followed by "...", so out_len bounds the line (4 * len + 1
 * holds any text whole). Returns out ("" when out_len is 0). */
const char *rdmx__log_escape(const void *text, size_t len, char *out, size_t out_len);

#define RDMX_LIKELY(x) __builtin_expect(!!(x), 1)
#define RDMX_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif
