/* rdmx-call list: the reflection service's ListResponse, printed */
#include <stdio.h>
#include <string.h>

#include <rdmx/reflection.h>

#include "callstream.h"
#include "list.h"
#include "mp.h"

static bool mp_str_eq(const struct rdmx_mp_obj *o, const char *s)
{
	return o->type == RDMX_MP_STR && o->via.str.size == strlen(s) &&
	       memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

/* ServiceInfo {1: name, 2: [methods], 3: file}: printed unless only is
 * given and is not its name. Returns whether it was printed. */
static bool print_service(const struct rdmx_mp_obj *svc, const char *only)
{
	const struct rdmx_mp_obj *name = NULL, *methods = NULL;

	if (svc->type != RDMX_MP_MAP)
		return false;
	for (uint32_t k = 0; k < svc->via.map.size; k++) {
		const struct rdmx_mp_kv *f = &svc->via.map.ptr[k];

		if (f->key.type != RDMX_MP_UINT)
			continue;
		if (f->key.via.u64 == 1 && f->val.type == RDMX_MP_STR)
			name = &f->val;
		else if (f->key.via.u64 == 2 && f->val.type == RDMX_MP_ARRAY)
			methods = &f->val;
	}
	if (!name || (only && !mp_str_eq(name, only)))
		return false;
	printf("%.*s\n", (int)name->via.str.size, name->via.str.ptr);
	for (uint32_t m = 0; methods && m < methods->via.array.size; m++) {
		const struct rdmx_mp_obj *mo = &methods->via.array.ptr[m];

		if (mo->type == RDMX_MP_STR)
			printf("  %.*s/%.*s\n", (int)name->via.str.size, name->via.str.ptr,
			       (int)mo->via.str.size, mo->via.str.ptr);
	}
	return true;
}

/* ListResponse {1: [ServiceInfo]}: the services printed (those named only,
 * when given). Returns how many were, or -1 when r is malformed (said). */
static int print_services(const struct rdmx_rpc_reply *r, const char *only)
{
	struct rdmx_mp_doc u;
	size_t off = 0;
	int found = 0;

	rdmx_mp_doc_init(&u);
	if (r->len == 0 || rdmx_mp_parse(&u, r->data, r->len, &off) != 0 || off != r->len ||
	    u.data.type != RDMX_MP_MAP) {
		fprintf(stderr, "rdmx-call: malformed ListResponse\n");
		rdmx_mp_doc_fini(&u);
		return -1;
	}
	for (uint32_t i = 0; i < u.data.via.map.size; i++) {
		const struct rdmx_mp_kv *kv = &u.data.via.map.ptr[i];

		if (kv->key.type != RDMX_MP_UINT || kv->key.via.u64 != 1 ||
		    kv->val.type != RDMX_MP_ARRAY)
			continue;
		for (uint32_t s = 0; s < kv->val.via.array.size; s++)
			found += print_service(&kv->val.via.array.ptr[s], only);
	}
	rdmx_mp_doc_fini(&u);
	return found;
}

int cmd_list(struct calltarget *t, const struct callopts *o)
{
	static const unsigned char empty[] = {0x80};
	const char *only = o->data;
	struct rdmx_rpc_reply r = {0};
	int ret = 1, found;

	if (calltarget_call(t, o, RDMX_REFLECTION_LIST_NAME, empty, sizeof(empty), true, &r))
		return 1;
	if (r.code != RDMX_RPC_OK) {
		ret = callmd_status_exit(r.code, r.message);
		rdmx_rpc_reply_fini(&r);
		return ret;
	}
	found = print_services(&r, only);
	if (found == 0 && only)
		fprintf(stderr, "rdmx-call: the server has no service %s\n", only);
	else if (found >= 0)
		ret = 0;
	rdmx_rpc_reply_fini(&r);
	return ret;
}
