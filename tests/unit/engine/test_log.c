/* Logging: threshold (default, environment, setter), user sink, default sink. */
#include <string.h>

#include "helpers.h"

#include <criterion/redirect.h>
#include "internal.h"

static char lines[8][256];
static enum rdmx_log_level levels[8];
static unsigned nlines;

static void capture(enum rdmx_log_level level, const char *file, int line, const char *func,
                    const char *message)
{
	(void)file;
	(void)line;
	(void)func;
	if (nlines < 8) {
		levels[nlines] = level;
		snprintf(lines[nlines], sizeof(lines[nlines]), "%s", message);
	}
	nlines++;
}

static void fresh_env(void)
{
	unsetenv("RDMX_LOG_LEVEL");
	nlines = 0;
}

Test(log, default_threshold_is_warning, .init = fresh_env)
{
	enum rdmx_log_level level = RDMX_LOG_DEBUG;

	assert_ok(rdmx_log_get_threshold(&level));
	cr_assert_eq(level, RDMX_LOG_WARNING);
	assert_rc(rdmx_log_get_threshold(NULL), RDMX_E_INVAL);
}

Test(log, environment_sets_threshold)
{
	enum rdmx_log_level level;

	setenv("RDMX_LOG_LEVEL", "5", 1);
	assert_ok(rdmx_log_get_threshold(&level));
	cr_assert_eq(level, RDMX_LOG_DEBUG);
}

Test(log, environment_accepts_names)
{
	enum rdmx_log_level level;

	setenv("RDMX_LOG_LEVEL", "error", 1);
	assert_ok(rdmx_log_get_threshold(&level));
	cr_assert_eq(level, RDMX_LOG_ERROR);
}

Test(log, bad_environment_keeps_default)
{
	enum rdmx_log_level level;

	setenv("RDMX_LOG_LEVEL", "loud", 1);
	cr_redirect_stderr();
	assert_ok(rdmx_log_get_threshold(&level));
	cr_assert_eq(level, RDMX_LOG_WARNING);
}

Test(log, bad_level_is_rejected, .init = fresh_env)
{
	enum rdmx_log_level level;

	assert_rc(rdmx_log_set_threshold((enum rdmx_log_level)6), RDMX_E_INVAL);
	assert_rc(rdmx_log_set_threshold((enum rdmx_log_level) - 2), RDMX_E_INVAL);
	assert_ok(rdmx_log_get_threshold(&level));
	cr_assert_eq(level, RDMX_LOG_WARNING);
	assert_ok(rdmx_log_set_threshold(RDMX_LOG_DISABLED));
	assert_ok(rdmx_log_set_threshold(RDMX_LOG_INFO));
	assert_ok(rdmx_log_get_threshold(&level));
	cr_assert_eq(level, RDMX_LOG_INFO);
}

Test(log, sink_receives_lines_at_or_below_threshold, .init = fresh_env)
{
	assert_ok(rdmx_log_set_function(capture));
	assert_ok(rdmx_log_set_threshold(RDMX_LOG_WARNING));
	RDMX_ERR("queue of %u entries failed", 7u);
	RDMX_WARN("warned\n");
	RDMX_DBG("not shown");
	rdmx__log(RDMX_LOG_INFO, __FILE__, __LINE__, __func__, "not shown either");
	cr_assert_eq(nlines, 2);
	cr_assert_str_eq(lines[0], "queue of 7 entries failed");
	cr_assert_eq(levels[0], RDMX_LOG_ERROR);
	cr_assert_str_eq(lines[1], "warned"); /* trailing newline dropped */
	cr_assert_eq(levels[1], RDMX_LOG_WARNING);

	assert_ok(rdmx_log_set_threshold(RDMX_LOG_DEBUG));
	RDMX_DBG("now shown");
	cr_assert_eq(nlines, 3);
	cr_assert_str_eq(lines[2], "now shown");

	assert_ok(rdmx_log_set_threshold(RDMX_LOG_DISABLED));
	RDMX_ERR("silenced");
	rdmx__log(RDMX_LOG_FATAL, __FILE__, __LINE__, __func__, "silenced");
	cr_assert_eq(nlines, 3);
}

Test(log, long_lines_are_truncated, .init = fresh_env)
{
	char big[4096];

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_ok(rdmx_log_set_function(capture));
	RDMX_ERR("%s", big);
	cr_assert_eq(nlines, 1);
	cr_assert_eq(lines[0][0], 'x');
}

Test(log, default_sink_writes_stderr, .init = fresh_env)
{
	cr_redirect_stderr();
	assert_ok(rdmx_log_set_function(capture));
	assert_ok(rdmx_log_set_function(NULL));
	RDMX_ERR("bad size %zu bytes", (size_t)12);
	RDMX_DBG("hidden");
	fflush(stderr);
	cr_assert_stderr_eq_str("rdmx error: bad size 12 bytes\n");
}

/* The rate limiter: one line a window; the count of what it held back is
 * never lost, whether another event comes (carried by its line) or not
 * (handed out by flush once the window is over). */
Test(log, rate_limit_keeps_the_count)
{
	struct rdmx__log_rate r = {0};
	const uint64_t s = RDMX__LOG_RATE_WINDOW_NS;
	uint64_t skipped = 99, total = 0;

	cr_assert(rdmx__log_rate_ok(&r, 5 * s, &skipped));
	cr_assert_eq(skipped, 0);
	for (int i = 0; i < 7; i++)
		cr_assert_not(rdmx__log_rate_ok(&r, 5 * s + (uint64_t)i, &skipped));
	cr_assert_eq(rdmx__log_rate_deadline(&r), 6 * s);
	cr_assert_not(rdmx__log_rate_flush(&r, 6 * s - 1, &skipped), "flushed inside the window");
	/* no further event: the flush reports the 7 */
	cr_assert(rdmx__log_rate_flush(&r, 6 * s, &skipped));
	cr_assert_eq(skipped, 7);
	total += skipped;
	cr_assert_eq(rdmx__log_rate_deadline(&r), UINT64_MAX);
	cr_assert_not(rdmx__log_rate_flush(&r, 9 * s, &skipped), "the count went out twice");
	/* a flood that goes on: the summary opened a window, its next line
	 * carries what came after */
	cr_assert_not(rdmx__log_rate_ok(&r, 6 * s + 1, &skipped));
	cr_assert_not(rdmx__log_rate_ok(&r, 6 * s + 2, &skipped));
	cr_assert(rdmx__log_rate_ok(&r, 7 * s, &skipped));
	cr_assert_eq(skipped, 2);
	total += skipped;
	cr_assert_eq(total, 9);
	/* quiet, then one event: logged at once with nothing to report */
	cr_assert(rdmx__log_rate_ok(&r, 20 * s, &skipped));
	cr_assert_eq(skipped, 0);
}
