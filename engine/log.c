/* Process-wide logging: a threshold (RDMX_LOG_LEVEL read once) and a sink.
 *
 * Both live in atomics so provider threads may log while the application
 * changes them; a line is formatted on the caller's stack and handed to the
 * sink in one call, so the default sink's single fprintf keeps lines whole. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <rdmx/log.h>
#include <rdmx/status.h>

#include "internal.h"

#define RDMX__LOG_LINE_MAX 1024

static atomic_int log_threshold = RDMX_LOG_WARNING;
static _Atomic(rdmx_log_function) log_sink;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static const char *const level_names[] = {
    "fatal", "error", "warning", "notice", "info", "debug",
};

static const char *level_name(enum rdmx_log_level level)
{
	if (level >= RDMX_LOG_FATAL && level <= RDMX_LOG_DEBUG)
		return level_names[level];
	return "?";
}

/* Accepts a digit (-1..5) or a level name ("debug", "disabled"). */
static int parse_level(const char *text, int *level)
{
	char *end;
	long v;

	if (!text || !*text)
		return RDMX_E_INVAL;
	v = strtol(text, &end, 10);
	if (*end == '\0') {
		if (v < RDMX_LOG_DISABLED || v > RDMX_LOG_DEBUG)
			return RDMX_E_INVAL;
		*level = (int)v;
		return 0;
	}
	if (strcasecmp(text, "disabled") == 0 || strcasecmp(text, "off") == 0) {
		*level = RDMX_LOG_DISABLED;
		return 0;
	}
	for (int i = RDMX_LOG_FATAL; i <= RDMX_LOG_DEBUG; i++) {
		if (strcasecmp(text, level_names[i]) == 0) {
			*level = i;
			return 0;
		}
	}
	return RDMX_E_INVAL;
}

static void log_init_once(void)
{
	const char *env = getenv("RDMX_LOG_LEVEL");
	int level;

	if (env && parse_level(env, &level) == 0)
		atomic_store(&log_threshold, level);
	else if (env)
		fprintf(stderr, "rdmx warning: ignoring RDMX_LOG_LEVEL=\"%.16s\" (want -1..5)\n",
		        env);
}

static void log_init(void)
{
	pthread_once(&log_once, log_init_once);
}

int rdmx_log_set_threshold(enum rdmx_log_level level)
{
	if ((int)level < RDMX_LOG_DISABLED || (int)level > RDMX_LOG_DEBUG)
		return RDMX_E_INVAL;
	log_init(); /* so that a later first use does not override this call */
	atomic_store(&log_threshold, (int)level);
	return 0;
}

int rdmx_log_get_threshold(enum rdmx_log_level *level)
{
	if (!level)
		return RDMX_E_INVAL;
	log_init();
	*level = (enum rdmx_log_level)atomic_load(&log_threshold);
	return 0;
}

int rdmx_log_set_function(rdmx_log_function fn)
{
	atomic_store(&log_sink, fn);
	return 0;
}

static void default_sink(enum rdmx_log_level level, const char *file, int line, const char *func,
                         const char *message)
{
	(void)file;
	(void)line;
	(void)func;
	fprintf(stderr, "rdmx %s: %s\n", level_name(level), message);
}

void rdmx__log(enum rdmx_log_level level, const char *file, int line, const char *func,
               const char *fmt, ...)
{
	char buf[RDMX__LOG_LINE_MAX];
	rdmx_log_function sink;
	va_list ap;
	int threshold;

	log_init();
	threshold = atomic_load_explicit(&log_threshold, memory_order_relaxed);
	if (threshold == RDMX_LOG_DISABLED || (int)level > threshold || (int)level < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* a trailing newline would double in the sink's output */
	size_t n = strlen(buf);
	if (n && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	sink = atomic_load(&log_sink);
	(sink ? sink : default_sink)(level, file, line, func, buf);
}

/* ---- rate limit ---- */

bool rdmx__log_rate_ok(struct rdmx__log_rate *r, uint64_t now_ns, uint64_t *skipped)
{
	*skipped = 0;
	if (r->logged && now_ns - r->window_ns < RDMX__LOG_RATE_WINDOW_NS) {
		r->suppressed++;
		return false;
	}
	/* the count of the window that ended goes out with this line */
	*skipped = r->suppressed;
	r->suppressed = 0;
	r->window_ns = now_ns;
	r->logged = true;
	return true;
}

bool rdmx__log_rate_flush(struct rdmx__log_rate *r, uint64_t now_ns, uint64_t *skipped)
{
	*skipped = 0;
	if (!r->suppressed || now_ns - r->window_ns < RDMX__LOG_RATE_WINDOW_NS)
		return false;
	*skipped = r->suppressed;
	r->suppressed = 0;
	/* the summary line opens a window too: a flood that goes on is logged
	 * once a window, its count never dropped */
	r->window_ns = now_ns;
	return true;
}

uint64_t rdmx__log_rate_deadline(const struct rdmx__log_rate *r)
{
	return r->suppressed ? r->window_ns + RDMX__LOG_RATE_WINDOW_NS : UINT64_MAX;
}
