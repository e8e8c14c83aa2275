/* rdmx logging: one process-wide threshold and an optional user sink.
 * Log lines never contain keys, tokens or private keys. */
#ifndef RDMX_LOG_H
#define RDMX_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

enum rdmx_log_level {
	RDMX_LOG_DISABLED = -1,
	RDMX_LOG_FATAL = 0,
	RDMX_LOG_ERROR = 1,
	RDMX_LOG_WARNING = 2,
	RDMX_LOG_NOTICE = 3,
	RDMX_LOG_INFO = 4,
	RDMX_LOG_DEBUG = 5,
};

/* Receives one formatted line (no trailing newline). Called from any thread
 * that logs, including provider threads: it must be thread-safe. */
typedef void (*rdmx_log_function)(enum rdmx_log_level level, const char *file, int line,
                                  const char *func, const char *message);

/* Messages at or below `level` are emitted. Default: RDMX_LOG_WARNING, or the
 * value of the environment variable RDMX_LOG_LEVEL (0..5) read at first use.
 * Errors: RDMX_E_INVAL for a level outside DISABLED..DEBUG. */
int rdmx_log_set_threshold(enum rdmx_log_level level);
int rdmx_log_get_threshold(enum rdmx_log_level *level);

/* NULL restores the default sink (stderr: "rdmx <level>: <message>"). */
int rdmx_log_set_function(rdmx_log_function fn);

/* Internal entry point used by RDMX_LOG; printf-style. */
void rdmx__log(enum rdmx_log_level level, const char *file, int line, const char *func,
               const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#ifdef __cplusplus
}
#endif
#endif
