/* Codec benchmark: rdmx-gen (msgpack) beside protobuf-c on the same schema
 * (bench.proto) and the same content, in one run. Encode = exact size + encode
 * into a caller buffer (X_encoded_size + X_encode vs get_packed_size + pack).
 * Decode = decode one buffer into a message and release it:
 *   rdmx        zero copy (strings/bytes point into the input), arena reset
 *   rdmx copy   strings/bytes copied into the arena, arena reset
 *   protobuf-c  unpack with the default (malloc) allocator + free_unpacked
 *   protobuf-c arena  unpack with a bump allocator whose free is a no-op, reset
 * Each cell is the median of --runs timed runs of at least --min-time seconds.
 * Usage: bench_codec [--runs N] [--min-time SECONDS] */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.pb-c.h"
#include "bench.rdmx.h"

#include "common/clock.h"

static volatile uint64_t sink;

static double now(void)
{
	return (double)rdmx__now_ns() * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* ---- the same content in both representations ---- */

#define N_ITEMS 40
#define N_TAGS 4
#define N_LABELS 8
#define BLOB 2048

static char names[N_ITEMS][24];
static char labels[N_LABELS][24];
static int64_t tags[N_ITEMS][N_TAGS];
static uint8_t blob[BLOB];

static bench_Small r_small;
static bench_Large r_large;
static bench_Header r_header;
static bench_Item r_items[N_ITEMS];
static struct rdmx_str r_labels[N_LABELS];

static Bench__Small p_small = BENCH__SMALL__INIT;
static Bench__Large p_large = BENCH__LARGE__INIT;
static Bench__Header p_header = BENCH__HEADER__INIT;
static Bench__Item p_items[N_ITEMS];
static Bench__Item *p_item_ptrs[N_ITEMS];
static char *p_labels[N_LABELS];

static void build(void)
{
	int i, j;
	for (i = 0; i < BLOB; i++)
		blob[i] = (uint8_t)(i * 7);
	bench_Small_init(&r_small);
	r_small.id = 123456;
	r_small.ts = 1700000000123456789ll;
	r_small.name = rdmx_str_c("alice@example.org");
	r_small.flag = true;
	r_small.value = 3.14159;
	p_small.id = r_small.id;
	p_small.ts = r_small.ts;
	p_small.name = (char *)"alice@example.org";
	p_small.flag = 1;
	p_small.value = r_small.value;

	bench_Header_init(&r_header);
	r_header.trace_id = rdmx_str_c("4bf92f3577b34da6a3ce929d0e0e4736");
	r_header.seq = 9876543210ull;
	r_header.kind = 7;
	r_header.source = rdmx_str_c("inventory-service");
	p_header.trace_id = (char *)"4bf92f3577b34da6a3ce929d0e0e4736";
	p_header.seq = r_header.seq;
	p_header.kind = 7;
	p_header.source = (char *)"inventory-service";
	for (i = 0; i < N_ITEMS; i++) {
		snprintf(names[i], sizeof(names[i]), "item-%04d-widget", i);
		for (j = 0; j < N_TAGS; j++)
			tags[i][j] = (int64_t)i * 1000 + j * 77;
		bench_Item_init(&r_items[i]);
		r_items[i].id = i + 1;
		r_items[i].name = rdmx_str_c(names[i]);
		r_items[i].price = 9.99 + i;
		r_items[i].tags = tags[i];
		r_items[i].n_tags = N_TAGS;
		r_items[i].available = i % 2 == 0;
		bench__item__init(&p_items[i]);
		p_items[i].id = i + 1;
		p_items[i].name = names[i];
		p_items[i].price = 9.99 + i;
		p_items[i].tags = tags[i];
		p_items[i].n_tags = N_TAGS;
		p_items[i].available = i % 2 == 0;
		p_item_ptrs[i] = &p_items[i];
	}
	for (i = 0; i < N_LABELS; i++) {
		snprintf(labels[i], sizeof(labels[i]), "label-%d=value-%d", i, i * i);
		r_labels[i] = rdmx_str_c(labels[i]);
		p_labels[i] = labels[i];
	}
	bench_Large_init(&r_large);
	r_large.header = &r_header;
	r_large.items = r_items;
	r_large.n_items = N_ITEMS;
	r_large.blob = rdmx_bytes_n(blob, BLOB);
	r_large.labels = r_labels;
	r_large.n_labels = N_LABELS;
	r_large.checksum = 0xdeadbeef;
	p_large.header = &p_header;
	p_large.items = p_item_ptrs;
	p_large.n_items = N_ITEMS;
	p_large.blob.data = blob;
	p_large.blob.len = BLOB;
	p_large.labels = p_labels;
	p_large.n_labels = N_LABELS;
	p_large.checksum = 0xdeadbeef;
}

/* ---- a bump allocator for protobuf-c (free is a no-op; reset per message) ---- */

static uint8_t pool[1 << 20];
static size_t pool_used;

static void *pool_alloc(void *data, size_t size)
{
	void *p;
	(void)data;
	size = (size + 15) & ~(size_t)15;
	if (pool_used + size > sizeof(pool))
		return NULL;
	p = pool + pool_used;
	pool_used += size;
	return p;
}

static void pool_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

static ProtobufCAllocator pool_allocator = {pool_alloc, pool_free, NULL};

/* ---- the operations ---- */

static uint8_t buf[1 << 16];
static size_t len_rs, len_rl, len_ps, len_pl;
static uint8_t enc_rs[1 << 12], enc_rl[1 << 14], enc_ps[1 << 12], enc_pl[1 << 14];
static struct rdmx_arena arena;
static const struct rdmx_decode_opts copy_opts = {0, true, 0};

enum op {
	ENC_R_SMALL,
	ENC_P_SMALL,
	DEC_R_SMALL,
	DEC_RC_SMALL,
	DEC_P_SMALL,
	DEC_PA_SMALL,
	ENC_R_LARGE,
	ENC_P_LARGE,
	DEC_R_LARGE,
	DEC_RC_LARGE,
	DEC_P_LARGE,
	DEC_PA_LARGE,
	OPS
};

static void run(enum op op, long n)
{
	long i;
	uint64_t acc = 0;
	for (i = 0; i < n; i++) {
		switch (op) {
		case ENC_R_SMALL: {
			size_t len = bench_Small_encoded_size(&r_small);
			acc +=
			    (uint64_t)bench_Small_encode(&r_small, buf, len) + len + buf[len - 1];
			break;
		}
		case ENC_P_SMALL: {
			size_t len = bench__small__get_packed_size(&p_small);
			acc += bench__small__pack(&p_small, buf) + len + buf[len - 1];
			break;
		}
		case ENC_R_LARGE: {
			size_t len = bench_Large_encoded_size(&r_large);
			acc +=
			    (uint64_t)bench_Large_encode(&r_large, buf, len) + len + buf[len - 1];
			break;
		}
		case ENC_P_LARGE: {
			size_t len = bench__large__get_packed_size(&p_large);
			acc += bench__large__pack(&p_large, buf) + len + buf[len - 1];
			break;
		}
		case DEC_R_SMALL:
		case DEC_RC_SMALL: {
			bench_Small m;
			rdmx_arena_reset(&arena);
			if (bench_Small_decode(&m, enc_rs, len_rs, &arena,
			                       op == DEC_RC_SMALL ? &copy_opts : NULL))
				abort();
			acc += (uint64_t)m.id + m.name.len;
			break;
		}
		case DEC_R_LARGE:
		case DEC_RC_LARGE: {
			bench_Large m;
			rdmx_arena_reset(&arena);
			if (bench_Large_decode(&m, enc_rl, len_rl, &arena,
			                       op == DEC_RC_LARGE ? &copy_opts : NULL))
				abort();
			acc += m.n_items + m.items[3].name.len + m.blob.len;
			break;
		}
		case DEC_P_SMALL: {
			Bench__Small *m = bench__small__unpack(NULL, len_ps, enc_ps);
			if (!m)
				abort();
			acc += (uint64_t)m->id + strlen(m->name);
			bench__small__free_unpacked(m, NULL);
			break;
		}
		case DEC_P_LARGE: {
			Bench__Large *m = bench__large__unpack(NULL, len_pl, enc_pl);
			if (!m)
				abort();
			acc += m->n_items + strlen(m->items[3]->name) + m->blob.len;
			bench__large__free_unpacked(m, NULL);
			break;
		}
		case DEC_PA_SMALL: {
			Bench__Small *m;
			pool_used = 0;
			m = bench__small__unpack(&pool_allocator, len_ps, enc_ps);
			if (!m)
				abort();
			acc += (uint64_t)m->id + strlen(m->name);
			break;
		}
		case DEC_PA_LARGE: {
			Bench__Large *m;
			pool_used = 0;
			m = bench__large__unpack(&pool_allocator, len_pl, enc_pl);
			if (!m)
				abort();
			acc += m->n_items + strlen(m->items[3]->name) + m->blob.len;
			break;
		}
		default:
			abort();
		}
	}
	sink += acc;
}

/* iterations of `op` that take about `t` seconds */
static long calibrate(enum op op, double t)
{
	long n = 16;
	double t0, dt;
	for (;;) {
		t0 = now();
		run(op, n);
		dt = now() - t0;
		if (dt >= t / 4)
			break;
		n *= 4;
	}
	return (long)((double)n * t / (dt > 0 ? dt : 1e-9)) + 1;
}

/* Median rate (operations/s) of `runs` timed runs per operation; the runs
 * of all operations are interleaved so that load changes on a shared
 * machine hit every column alike. */
static void measure_all(double *res, int runs, double min_time)
{
	static double rates[OPS][64];
	long n[OPS];
	int r, op;
	for (op = 0; op < OPS; op++)
		n[op] = calibrate((enum op)op, min_time);
	for (r = 0; r < runs; r++) {
		for (op = 0; op < OPS; op++) {
			double t0 = now(), dt;
			run((enum op)op, n[op]);
			dt = now() - t0;
			rates[op][r] = (double)n[op] / dt;
		}
	}
	for (op = 0; op < OPS; op++) {
		qsort(rates[op], (size_t)runs, sizeof(double), cmp_double);
		res[op] = rates[op][runs / 2];
	}
}

/* both decoders must see the same content */
static void verify(void)
{
	bench_Large r;
	Bench__Large *p = bench__large__unpack(NULL, len_pl, enc_pl);
	size_t i, j;
	rdmx_arena_reset(&arena);
	if (!p || bench_Large_decode(&r, enc_rl, len_rl, &arena, NULL) != 0)
		abort();
	if (r.n_items != p->n_items || r.blob.len != p->blob.len ||
	    memcmp(r.blob.data, p->blob.data, r.blob.len) != 0 || r.checksum != p->checksum ||
	    !rdmx_str_eq(r.header->trace_id, p->header->trace_id) ||
	    r.header->seq != p->header->seq)
		abort();
	for (i = 0; i < r.n_items; i++) {
		if (!rdmx_str_eq(r.items[i].name, p->items[i]->name) ||
		    r.items[i].id != p->items[i]->id || r.items[i].price != p->items[i]->price ||
		    r.items[i].n_tags != p->items[i]->n_tags)
			abort();
		for (j = 0; j < r.items[i].n_tags; j++)
			if (r.items[i].tags[j] != p->items[i]->tags[j])
				abort();
	}
	for (i = 0; i < r.n_labels; i++)
		if (!rdmx_str_eq(r.labels[i], p->labels[i]))
			abort();
	bench__large__free_unpacked(p, NULL);
}

int main(int argc, char **argv)
{
	int runs = 7, i;
	double min_time = 0.2, res[OPS];
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--min-time") == 0 && i + 1 < argc)
			min_time = atof(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--runs N] [--min-time SECONDS]\n", argv[0]);
			return 2;
		}
	}
	if (runs < 1 || runs > 64 || !(min_time > 0)) {
		fprintf(stderr, "bench_codec: --runs 1..64, --min-time > 0\n");
		return 2;
	}
	build();
	rdmx_arena_init(&arena, NULL, 0, 0);
	len_rs = bench_Small_encoded_size(&r_small);
	len_rl = bench_Large_encoded_size(&r_large);
	len_ps = bench__small__get_packed_size(&p_small);
	len_pl = bench__large__get_packed_size(&p_large);
	if (len_rl > sizeof(enc_rl) || len_pl > sizeof(enc_pl) ||
	    bench_Small_encode(&r_small, enc_rs, len_rs) ||
	    bench_Large_encode(&r_large, enc_rl, len_rl) ||
	    bench__small__pack(&p_small, enc_ps) != len_ps ||
	    bench__large__pack(&p_large, enc_pl) != len_pl)
		abort();
	verify();
	measure_all(res, runs, min_time);

	printf("| message | codec | encoded bytes | encode (M msg/s) | decode (M msg/s) |\n");
	printf("|---|---|---:|---:|---:|\n");
	printf("| small (5 fields) | rdmx-gen (msgpack), zero-copy decode | %zu | %.2f | %.2f |\n",
	       len_rs, res[ENC_R_SMALL] / 1e6, res[DEC_R_SMALL] / 1e6);
	printf("| small (5 fields) | rdmx-gen (msgpack), copying decode | %zu | %.2f | %.2f |\n",
	       len_rs, res[ENC_R_SMALL] / 1e6, res[DEC_RC_SMALL] / 1e6);
	printf("| small (5 fields) | protobuf-c, malloc | %zu | %.2f | %.2f |\n", len_ps,
	       res[ENC_P_SMALL] / 1e6, res[DEC_P_SMALL] / 1e6);
	printf("| small (5 fields) | protobuf-c, bump allocator | %zu | %.2f | %.2f |\n", len_ps,
	       res[ENC_P_SMALL] / 1e6, res[DEC_PA_SMALL] / 1e6);
	printf("| large (nested, repeated) | rdmx-gen (msgpack), zero-copy decode | %zu | %.3f | "
	       "%.3f |\n",
	       len_rl, res[ENC_R_LARGE] / 1e6, res[DEC_R_LARGE] / 1e6);
	printf("| large (nested, repeated) | rdmx-gen (msgpack), copying decode | %zu | %.3f | "
	       "%.3f |\n",
	       len_rl, res[ENC_R_LARGE] / 1e6, res[DEC_RC_LARGE] / 1e6);
	printf("| large (nested, repeated) | protobuf-c, malloc | %zu | %.3f | %.3f |\n", len_pl,
	       res[ENC_P_LARGE] / 1e6, res[DEC_P_LARGE] / 1e6);
	printf("| large (nested, repeated) | protobuf-c, bump allocator | %zu | %.3f | %.3f |\n",
	       len_pl, res[ENC_P_LARGE] / 1e6, res[DEC_PA_LARGE] / 1e6);
	printf("\nratios rdmx-gen / protobuf-c (malloc): small encode %.2fx, decode %.2fx (copying "
	       "%.2fx); large encode %.2fx, decode %.2fx (copying %.2fx)\n",
	       res[ENC_R_SMALL] / res[ENC_P_SMALL], res[DEC_R_SMALL] / res[DEC_P_SMALL],
	       res[DEC_RC_SMALL] / res[DEC_P_SMALL], res[ENC_R_LARGE] / res[ENC_P_LARGE],
	       res[DEC_R_LARGE] / res[DEC_P_LARGE], res[DEC_RC_LARGE] / res[DEC_P_LARGE]);
	printf("(medians of %d runs of >= %.2f s each)\n", runs, min_time);
	rdmx_arena_fini(&arena);
	return 0;
}
