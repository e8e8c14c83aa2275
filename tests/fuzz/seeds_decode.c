/* Writes the seed corpus of fuzz_decode (committed in corpus/fuzz_decode):
 * valid encodings of each message type of all.proto, prefixed with the
 * target's two selector bytes. Run: fuzz_decode_seeds DIR */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "all.rdmx.h"

static const char *dir;
static int count;

static void put(int type, int flags, const void *p, size_t n)
{
	char path[4096];
	FILE *fp;
	snprintf(path, sizeof(path), "%s/seed-%d-%02d", dir, type, count++);
	fp = fopen(path, "wb");
	if (!fp) {
		perror(path);
		exit(1);
	}
	fputc(type, fp);
	fputc(flags, fp);
	fwrite(p, 1, n, fp);
	fclose(fp);
}

#define SEED(T, type, m)                                                                           \
	do {                                                                                       \
		size_t n_ = T##_encoded_size(m);                                                   \
		void *b_ = malloc(n_);                                                             \
		if (!b_ || T##_encode(m, b_, n_) != 0)                                             \
			exit(1);                                                                   \
		put(type, 0, b_, n_);                                                              \
		put(type, 1, b_, n_);                                                              \
		free(b_);                                                                          \
	} while (0)

int main(int argc, char **argv)
{
	rt_Scalars s;
	rt_Optionals o;
	rt_Repeated r;
	rt_Maps m;
	rt_Oneofs of;
	rt_Tree t, kids[2];
	rt_Tree_Leaf leaf;
	rt_BigKeys bk;
	rt_Wide w;
	rt_Empty e;
	rt_Reserved rs;
	int32_t ints[3] = {1, -200, 70000};
	struct rdmx_str strs[2] = {{"a", 1}, {"\xc3\xa9t\xc3\xa9", 5}};
	double dbl[2] = {-0.0, 1e300};
	rt_Maps_SsEntry ss[1] = {{{"k", 1}, {"v", 1}}};
	rt_Maps_UmEntry um[1];
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];

	rt_Scalars_init(&s);
	SEED(rt_Scalars, 0, &s);
	s.i32 = -5;
	s.i64 = INT64_MIN;
	s.u64 = UINT64_MAX;
	s.b = true;
	s.fl = -0.0f;
	s.db = NAN;
	s.str = rdmx_str_c("hello \xe2\x9c\x93");
	s.byt = rdmx_bytes_n("\x00\xff", 2);
	s.lvl = rt_Level_LEVEL_NEG;
	SEED(rt_Scalars, 0, &s);

	rt_Optionals_init(&o);
	o.has_i32 = o.has_str = true;
	o.msg = &s;
	SEED(rt_Optionals, 1, &o);

	rt_Repeated_init(&r);
	r.i32 = ints;
	r.n_i32 = 3;
	r.str = strs;
	r.n_str = 2;
	r.db = dbl;
	r.n_db = 2;
	r.msgs = &s;
	r.n_msgs = 1;
	SEED(rt_Repeated, 2, &r);

	rt_Maps_init(&m);
	m.ss = ss;
	m.n_ss = 1;
	um[0].key = 9;
	um[0].value = &s;
	m.um = um;
	m.n_um = 1;
	SEED(rt_Maps, 3, &m);

	rt_Oneofs_init(&of);
	of.choice_case = rt_Oneofs_choice_c;
	of.c = &s;
	of.other_case = rt_Oneofs_other_x;
	of.x = true;
	SEED(rt_Oneofs, 4, &of);

	rt_Tree_Leaf_init(&leaf);
	leaf.value = 3;
	rt_Tree_init(&t);
	rt_Tree_init(&kids[0]);
	rt_Tree_init(&kids[1]);
	kids[0].left = &kids[1];
	kids[1].leaf = &leaf;
	t.children = kids;
	t.n_children = 2;
	t.name = rdmx_str_c("root");
	SEED(rt_Tree, 5, &t);

	rt_BigKeys_init(&bk);
	bk.k128 = 1;
	bk.k65536 = 2;
	bk.kmax = 3;
	SEED(rt_BigKeys, 6, &bk);

	rt_Wide_init(&w);
	w.f1 = w.f5 = w.f10 = w.f15 = w.f16 = w.f17 = w.f18 = w.f19 = 1;
	w.f2 = w.f3 = w.f4 = w.f6 = w.f7 = w.f8 = w.f9 = w.f11 = 2;
	w.f20 = rdmx_str_c("x");
	SEED(rt_Wide, 7, &w);

	rt_Empty_init(&e);
	SEED(rt_Empty, 8, &e);
	rt_Reserved_init(&rs);
	rs.ok = 1;
	SEED(rt_Reserved, 9, &rs);
	{
		/* an unknown field holding every msgpack type */
		static const uint8_t unk[] = {0x82, 0x01, 0x05, 0x63, 0x96, 0xc0, 0xc3, 0xcb, 0,
		                              0,    0,    0,    0,    0,    0,    0,    0xa1, 'x',
		                              0xc4, 0x01, 0x00, 0x81, 0xd4, 0x01, 0x02, 0x90};
		put(0, 0, unk, sizeof(unk));
	}
	printf("%d seeds written to %s\n", count, dir);
	return 0;
}
