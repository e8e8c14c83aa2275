/* rdmx-call's schemas: --proto, or the server's reflection service */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <rdmx/reflection.h>

#include "mp.h"
#include "schema.h"

/* IDL file names become paths under a private temporary folder: only
 * plain relative names, no "..", no odd bytes. */
static bool safe_name(const char *s, size_t n)
{
	if (n == 0 || n > 200 || s[0] == '/' || s[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.' || ch == '/'))
			return false;
		if (ch == '/' && (i + 1 == n || s[i + 1] == '/' || s[i + 1] == '.'))
			return false;
	}
	return true;
}

struct tmpdir {
	char root[64];
	char paths[64][300];
	int n;
	char first[300]; /* the first file written: the one that holds the symbol */
};

static void tmpdir_clean(struct tmpdir *t)
{
	/* newest first: a folder's files go before it */
	for (int i = t->n - 1; i >= 0; i--)
		if (unlink(t->paths[i]) != 0)
			rmdir(t->paths[i]);
	if (t->root[0])
		rmdir(t->root);
}

static int write_idl(struct tmpdir *t, const char *name, size_t nlen, const char *src, size_t slen)
{
	char path[300];
	FILE *f;

	if (!safe_name(name, nlen) || t->n >= 60)
		return -1;
	snprintf(path, sizeof(path), "%s/%.*s", t->root, (int)nlen, name);
	for (char *p = path + strlen(t->root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0700) == 0)
			snprintf(t->paths[t->n++], sizeof(t->paths[0]), "%s", path);
		*p = '/';
	}
	f = fopen(path, "wx");
	if (!f)
		return -1;
	snprintf(t->paths[t->n++], sizeof(t->paths[0]), "%s", path);
	if (fwrite(src, 1, slen, f) != slen) {
		fclose(f);
		return -1;
	}
	if (fclose(f))
		return -1;
	if (!t->first[0])
		snprintf(t->first, sizeof(t->first), "%s", path);
	return 0;
}

/* The reply of FileContaining for symbol, OK, in r. 0, or -1 (said). */
static int file_containing(struct calltarget *t, const struct callopts *o, const char *symbol,
                           struct rdmx_rpc_reply *r)
{
	unsigned char req[300];
	size_t sl = strlen(symbol);

	if (sl > 250)
		return -1;
	/* FileContainingRequest {1: symbol} */
	req[0] = 0x81;
	req[1] = 0x01;
	req[2] = 0xd9;
	req[3] = (unsigned char)sl;
	memcpy(req + 4, symbol, sl);
	if (calltarget_call(t, o, RDMX_REFLECTION_FILE_CONTAINING_NAME, req, 4 + sl, true, r))
		return -1;
	if (r->code != RDMX_RPC_OK) {
		fprintf(stderr,
		        "rdmx-call: the server gave no schema for %s (%s%s%s); give --proto FILE\n",
		        symbol, rdmx_rpc_code_name(r->code), r->message ? ": " : "",
		        r->message ? r->message : "");
		return -1;
	}
	return 0;
}

/* File {1: name, 2: source} written under d. 0; -1 when malformed, -2
 * when its name is unusable (said). */
static int write_file(struct tmpdir *d, const struct rdmx_mp_obj *fo)
{
	const struct rdmx_mp_obj *name = NULL, *src = NULL;

	if (fo->type != RDMX_MP_MAP)
		return -1;
	for (uint32_t m = 0; m < fo->via.map.size; m++) {
		const struct rdmx_mp_kv *f = &fo->via.map.ptr[m];

		if (f->key.type != RDMX_MP_UINT || f->val.type != RDMX_MP_STR)
			continue;
		if (f->key.via.u64 == 1)
			name = &f->val;
		else if (f->key.via.u64 == 2)
			src = &f->val;
	}
	if (!name || write_idl(d, name->via.str.ptr, name->via.str.size,
	                       src ? src->via.str.ptr : "", src ? src->via.str.size : 0)) {
		fprintf(stderr, "rdmx-call: the server sent an IDL file with an unusable name\n");
		return -2;
	}
	return 0;
}

/* FileContainingResponse {1: [File]}: every file written under d. 0; -1
 * when malformed, -2 when a name is unusable (said). */
static int write_files(struct tmpdir *d, const struct rdmx_rpc_reply *r)
{
	struct rdmx_mp_doc u;
	size_t off = 0;
	int rc = 0;

	rdmx_mp_doc_init(&u);
	if (rdmx_mp_parse(&u, r->data, r->len, &off) != 0 || off != r->len ||
	    u.data.type != RDMX_MP_MAP)
		rc = -1;
	for (uint32_t i = 0; !rc && i < u.data.via.map.size; i++) {
		const struct rdmx_mp_kv *kv = &u.data.via.map.ptr[i];

		if (kv->key.type != RDMX_MP_UINT || kv->key.via.u64 != 1 ||
		    kv->val.type != RDMX_MP_ARRAY)
			continue;
		for (uint32_t k = 0; !rc && k < kv->val.via.array.size; k++)
			rc = write_file(d, &kv->val.via.array.ptr[k]);
	}
	rdmx_mp_doc_fini(&u);
	return rc;
}

static int schema_from_server(struct calltarget *t, const struct callopts *o, const char *symbol,
                              struct pbschema *schema)
{
	struct rdmx_rpc_reply r = {0};
	struct tmpdir d = {{0}, {{0}}, 0, {0}};
	const char *incl[1];
	int rc, ret = -1;

	if (file_containing(t, o, symbol, &r)) {
		rdmx_rpc_reply_fini(&r);
		return -1;
	}
	snprintf(d.root, sizeof(d.root), "/tmp/rdmx-call-XXXXXX");
	if (!mkdtemp(d.root)) {
		fprintf(stderr, "rdmx-call: mkdtemp: %s\n", strerror(errno));
		rdmx_rpc_reply_fini(&r);
		return -1;
	}
	rc = write_files(&d, &r);
	if (rc == -1 || (rc == 0 && !d.first[0])) {
		fprintf(stderr, "rdmx-call: malformed FileContainingResponse\n");
	} else if (rc == 0) {
		incl[0] = d.root;
		ret = pbschema_load(schema, d.first, incl, 1, stderr);
		if (ret)
			fprintf(stderr, "rdmx-call: the server's IDL for %s does not parse\n",
			        symbol);
	}
	rdmx_rpc_reply_fini(&r);
	tmpdir_clean(&d);
	return ret ? -1 : 0;
}

int callschema_load(struct calltarget *t, const struct callopts *o, const char *symbol,
                    struct pbschema *schema)
{
	if (o->proto)
		return pbschema_load(schema, o->proto, o->includes, o->n_includes, stderr);
	return schema_from_server(t, o, symbol, schema);
}
