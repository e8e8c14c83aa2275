/* The progress meter (progress.h). */
#include "progress.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include <rdmx/pe.h>

static uint64_t mono_ns(void)
{
	return rdmx_pe_now_ns();
}

bool rdmx_progress_enabled(bool quiet)
{
	return !quiet && isatty(STDERR_FILENO);
}

void rdmx_progress_init(struct rdmx_progress *p, const char *what, uint64_t total_bytes, bool quiet)
{
	p->on = rdmx_progress_enabled(quiet);
	p->drawn = false;
	p->what = what;
	p->total_bytes = total_bytes;
	p->total_ns = 0;
	p->t0_ns = mono_ns();
	p->last_ns = 0;
}

void rdmx_progress_init_timed(struct rdmx_progress *p, const char *what, uint64_t duration_ns,
                              bool quiet)
{
	rdmx_progress_init(p, what, 0, quiet);
	p->total_ns = duration_ns;
}

static void fmt_bytes(double b, char *out, size_t len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = 0;

	while (b >= 1024.0 && u < 4) {
		b /= 1024.0;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
}

static void draw(struct rdmx_progress *p, uint64_t done, uint64_t now)
{
	double secs = (double)(now - p->t0_ns) / 1e9, rate = secs > 0 ? (double)done / secs : 0;
	char got[32], all[32], speed[32], left[32] = "--:--";
	double remain = -1;

	fmt_bytes((double)done, got, sizeof(got));
	fmt_bytes(rate, speed, sizeof(speed));
	if (p->total_ns)
		remain = p->total_ns > now - p->t0_ns
		             ? (double)(p->total_ns - (now - p->t0_ns)) / 1e9
		             : 0;
	else if (p->total_bytes && rate > 0)
		remain = done >= p->total_bytes ? 0 : (double)(p->total_bytes - done) / rate;
	if (remain >= 0)
		snprintf(left, sizeof(left), "%u:%02u", (unsigned)(remain / 60),
		         (unsigned)remain % 60);
	if (p->total_bytes) {
		fmt_bytes((double)p->total_bytes, all, sizeof(all));
		fprintf(stderr, "\r%s: %s / %s  %s/s  %s left\033[K", p->what, got, all, speed,
		        left);
	} else {
		fprintf(stderr, "\r%s: %s  %s/s  %s left\033[K", p->what, got, speed, left);
	}
	fflush(stderr);
	p->drawn = true;
	p->last_ns = now;
}

void rdmx_progress_update(struct rdmx_progress *p, uint64_t done)
{
	uint64_t now;

	if (!p->on)
		return;
	now = mono_ns();
	if (p->last_ns && now - p->last_ns < 100000000u)
		return;
	draw(p, done, now);
}

void rdmx_progress_finish(struct rdmx_progress *p, uint64_t done)
{
	if (!p->on)
		return;
	draw(p, done, mono_ns());
	fputc('\n', stderr);
	fflush(stderr);
}
