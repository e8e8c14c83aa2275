/* rdmx.reflection.v1.Reflection (List, FileContaining), answered by every
 * RPC server (include/rdmx/reflection.h), and the per-server state that the
 * builtin services share (builtins.h). Messages are written and read by hand
 * with the codec runtime, as in health.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/codec.h>
#include <rdmx/reflection.h>
#include <rdmx/rpc.h>
#include <rdmx/status.h>

#include "builtins.h"
#include "rpc_priv.h"

#define REFL_MAX_SYMBOL 1024u

/* rpc/idl/reflection.proto, byte for byte (tests/integration/product checks) */
static const char reflection_idl[] =
    "// rdmx.reflection.v1: what a server serves, and the IDL source of it\n"
    "// (registered by rdmx_rpc_server_create; see include/rdmx/reflection.h).\n"
    "// rdmx-call uses it to list services and to turn JSON into requests.\n"
    "syntax = \"proto3\";\n"
    "package rdmx.reflection.v1;\n"
    "\n"
    "message ListRequest {}\n"
    "\n"
    "message ServiceInfo {\n"
    "  string name = 1;              // \"package.Service\"\n"
    "  repeated string methods = 2;  // method names, sorted (\"Check\")\n"
    "  string file = 3;              // IDL file that defines it, \"\" when unknown\n"
    "}\n"
    "\n"
    "message ListResponse {\n"
    "  repeated ServiceInfo services = 1;  // sorted by name\n"
    "}\n"
    "\n"
    "message FileContainingRequest {\n"
    "  // \"package.Service\", \"package.Service/Method\" or an IDL file name\n"
    "  string symbol = 1;\n"
    "}\n"
    "\n"
    "message File {\n"
    "  string name = 1;    // as registered (\"kv.proto\")\n"
    "  string source = 2;  // the IDL text\n"
    "}\n"
    "\n"
    "message FileContainingResponse {\n"
    "  // the file that holds the symbol first, then the registered files it\n"
    "  // imports (transitively); NOT_FOUND when no registered file holds it\n"
    "  repeated File files = 1;\n"
    "}\n"
    "\n"
    "service Reflection {\n"
    "  rpc List(ListRequest) returns (ListResponse);\n"
    "  rpc FileContaining(FileContainingRequest) returns (FileContainingResponse);\n"
    "}\n";

static void list_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg);
static void file_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg);

/* ---- the shared state ---- */

struct rdmx__builtins *rdmx__builtins_of(const struct rdmx_rpc_server *server)
{
	struct rpc_method *m;

	if (!server)
		return NULL;
	m = rdmx__map_get(&server->methods, rdmx_rpc_method_id(RDMX_REFLECTION_LIST_NAME));
	return (m && m->handler == list_handler) ? m->arg : NULL;
}

bool rdmx__builtins_has_service(const struct rdmx__builtins *b, const char *service, size_t len)
{
	const struct rpc_method *m;
	uint32_t pos = 0;

	while ((m = rdmx__map_next(&b->server->methods, &pos, NULL)))
		if (m->name && strncmp(m->name, service, len) == 0 && m->name[len] == '/')
			return true;
	return false;
}

int rdmx__builtins_decode_str1(const void *req, size_t len, const char **s, size_t *n)
{
	struct rdmx_str v = {"", 0};
	struct rdmx_dec d;
	uint32_t count, key;
	int rc;

	if (len == 0) {
		*s = "";
		*n = 0;
		return 0;
	}
	rc = rdmx__dec_init(&d, req, len, NULL, NULL, 1);
	if (!rc)
		rc = rdmx__dec_map(&d, &count);
	for (uint32_t i = 0; !rc && i < count; i++) {
		rc = rdmx__dec_key(&d, &key);
		if (rc)
			break;
		if (key == 1 && !rdmx__dec_nil(&d))
			rc = rdmx__dec_str(&d, &v);
		else if (key != 1)
			rc = rdmx__dec_skip(&d);
	}
	if (!rc)
		rc = rdmx__dec_finish(&d);
	if (rc)
		return rc;
	*s = v.data ? v.data : "";
	*n = v.len;
	return 0;
}

/* ListRequest: empty, or one map whose fields (none defined) are skipped. */
static int decode_empty_request(const void *req, size_t len)
{
	struct rdmx_dec d;
	uint32_t count, key;
	int rc;

	if (len == 0)
		return 0;
	rc = rdmx__dec_init(&d, req, len, NULL, NULL, 1);
	if (!rc)
		rc = rdmx__dec_map(&d, &count);
	for (uint32_t i = 0; !rc && i < count; i++) {
		rc = rdmx__dec_key(&d, &key);
		if (!rc)
			rc = rdmx__dec_skip(&d);
	}
	if (!rc)
		rc = rdmx__dec_finish(&d);
	return rc;
}

static void file_fini(struct rdmx__refl_file *f)
{
	for (size_t i = 0; i < f->n_services; i++)
		free(f->services[i]);
	for (size_t i = 0; i < f->n_imports; i++)
		free(f->imports[i]);
	free(f->services);
	free(f->imports);
	free(f->package);
	free(f->name);
	free(f->text);
	memset(f, 0, sizeof(*f));
}

static void builtins_free(struct rdmx__builtins *b)
{
	for (size_t i = 0; i < b->n_files; i++)
		file_fini(&b->files[i]);
	free(b->files);
	rdmx__health_fini(b);
	free(b);
}

int rdmx__rpc_builtins_add(struct rdmx_rpc_server *server)
{
	struct rdmx__builtins *b = calloc(1, sizeof(*b));
	int rc;

	if (!b)
		return RDMX_E_NOMEM;
	b->server = server;
	/* List first: its arg anchors the state (rdmx__builtins_of) */
	rc = rdmx_rpc_server_register(server, rdmx_rpc_method_id(RDMX_REFLECTION_LIST_NAME),
	                              RDMX_REFLECTION_LIST_NAME, list_handler, b);
	if (rc) {
		builtins_free(b);
		return rc;
	}
	/* from here on rdmx__rpc_builtins_release (server destroy) frees b */
	rc = rdmx_rpc_server_register(server,
	                              rdmx_rpc_method_id(RDMX_REFLECTION_FILE_CONTAINING_NAME),
	                              RDMX_REFLECTION_FILE_CONTAINING_NAME, file_handler, b);
	if (!rc)
		rc = rdmx__health_register(b);
	if (!rc)
		rc = rdmx_rpc_server_add_reflection(server, "rdmx/health.proto", rdmx__health_idl);
	if (!rc)
		rc =
		    rdmx_rpc_server_add_reflection(server, "rdmx/reflection.proto", reflection_idl);
	return rc;
}

void rdmx__rpc_builtins_release(struct rdmx_rpc_server *server)
{
	struct rdmx__builtins *b = rdmx__builtins_of(server);
	struct rpc_method *m;

	if (!b)
		return;
	m = rdmx__map_get(&server->methods, rdmx_rpc_method_id(RDMX_REFLECTION_LIST_NAME));
	m->arg = NULL;
	builtins_free(b);
}

/* ---- a light scan of IDL text: package, services, imports ---- */

struct scan {
	const char *p, *end;
	char tok[256]; /* identifier or string; longer ones are cut (and so never match) */
	char kind;     /* 'i' identifier, 's' string, or the symbol itself; 0 at the end */
};

static void scan_next(struct scan *s)
{
	size_t n = 0;

	for (;;) {
		while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' ||
		                         *s->p == '\r' || *s->p == '\f' || *s->p == '\v'))
			s->p++;
		if (s->end - s->p >= 2 && s->p[0] == '/' && s->p[1] == '/') {
			while (s->p < s->end && *s->p != '\n')
				s->p++;
		} else if (s->end - s->p >= 2 && s->p[0] == '/' && s->p[1] == '*') {
			s->p += 2;
			while (s->end - s->p >= 2 && !(s->p[0] == '*' && s->p[1] == '/'))
				s->p++;
			s->p = s->end - s->p >= 2 ? s->p + 2 : s->end;
		} else {
			break;
		}
	}
	s->tok[0] = '\0';
	if (s->p >= s->end) {
		s->kind = 0;
		return;
	}
	if (*s->p == '"' || *s->p == '\'') {
		char q = *s->p++;

		while (s->p < s->end && *s->p != q && *s->p != '\n') {
			if (*s->p == '\\' && s->p + 1 < s->end)
				s->p++;
			if (n + 1 < sizeof(s->tok))
				s->tok[n++] = *s->p;
			s->p++;
		}
		if (s->p < s->end && *s->p == q)
			s->p++;
		s->tok[n] = '\0';
		s->kind = 's';
		return;
	}
	if ((*s->p >= 'a' && *s->p <= 'z') || (*s->p >= 'A' && *s->p <= 'Z') || *s->p == '_' ||
	    *s->p == '.') {
		while (s->p < s->end &&
		       ((*s->p >= 'a' && *s->p <= 'z') || (*s->p >= 'A' && *s->p <= 'Z') ||
		        (*s->p >= '0' && *s->p <= '9') || *s->p == '_' || *s->p == '.')) {
			if (n + 1 < sizeof(s->tok))
				s->tok[n++] = *s->p;
			s->p++;
		}
		s->tok[n] = '\0';
		s->kind = 'i';
		return;
	}
	s->kind = *s->p++;
}

static int push_str(char ***v, size_t *n, const char *s)
{
	char **grown = realloc(*v, (*n + 1) * sizeof(**v));

	if (!grown)
		return RDMX_E_NOMEM;
	*v = grown;
	if (!(grown[*n] = strdup(s)))
		return RDMX_E_NOMEM;
	(*n)++;
	return 0;
}

static int scan_file(struct rdmx__refl_file *f)
{
	struct scan s = {f->text, f->text + strlen(f->text), {0}, 0};
	char full[600];
	int depth = 0, rc = 0;

	if (!(f->package = strdup("")))
		return RDMX_E_NOMEM;
	for (scan_next(&s); s.kind && !rc; scan_next(&s)) {
		if (s.kind == '{') {
			depth++;
		} else if (s.kind == '}') {
			depth -= depth > 0;
		} else if (s.kind == 'i' && depth == 0 && strcmp(s.tok, "package") == 0) {
			scan_next(&s);
			if (s.kind == 'i') {
				free(f->package);
				if (!(f->package = strdup(s.tok)))
					rc = RDMX_E_NOMEM;
			}
		} else if (s.kind == 'i' && depth == 0 && strcmp(s.tok, "import") == 0) {
			scan_next(&s);
			if (s.kind == 'i' && (!strcmp(s.tok, "public") || !strcmp(s.tok, "weak")))
				scan_next(&s);
			if (s.kind == 's')
				rc = push_str(&f->imports, &f->n_imports, s.tok);
		} else if (s.kind == 'i' && depth == 0 && strcmp(s.tok, "service") == 0) {
			scan_next(&s);
			if (s.kind != 'i')
				continue;
			snprintf(full, sizeof(full), "%s%s%s", f->package, *f->package ? "." : "",
			         s.tok);
			rc = push_str(&f->services, &f->n_services, full);
		}
	}
	return rc;
}

int rdmx_rpc_server_add_reflection(struct rdmx_rpc_server *server, const char *name,
                                   const char *idl_text)
{
	struct rdmx__builtins *b = rdmx__builtins_of(server);
	struct rdmx__refl_file f = {0}, *grown;
	size_t len;
	int rc;

	if (!b || !name || !*name || !idl_text || strlen(name) > REFL_MAX_SYMBOL)
		return RDMX_E_INVAL;
	len = strnlen(idl_text, RDMX_REFLECTION_MAX_FILE + 1);
	if (len > RDMX_REFLECTION_MAX_FILE || !rdmx__utf8_valid((const uint8_t *)idl_text, len))
		return RDMX_E_INVAL; /* strings on the wire are UTF-8 */
	f.name = strdup(name);
	f.text = strndup(idl_text, len);
	if (!f.name || !f.text) {
		file_fini(&f);
		return RDMX_E_NOMEM;
	}
	rc = scan_file(&f);
	if (rc) {
		file_fini(&f);
		return rc;
	}
	for (size_t i = 0; i < b->n_files; i++) {
		if (strcmp(b->files[i].name, name) == 0) {
			file_fini(&b->files[i]);
			b->files[i] = f;
			return 0;
		}
	}
	grown = realloc(b->files, (b->n_files + 1) * sizeof(*grown));
	if (!grown) {
		file_fini(&f);
		return RDMX_E_NOMEM;
	}
	b->files = grown;
	b->files[b->n_files++] = f;
	return 0;
}

int rdmx__rpc_server_add_reflection_parts(struct rdmx_rpc_server *server, const char *name,
                                          const char *const *parts, size_t n)
{
	size_t len = 0, at = 0;
	char *text;
	int rc;

	if (!parts)
		return RDMX_E_INVAL;
	for (size_t i = 0; i < n; i++) {
		if (!parts[i])
			return RDMX_E_INVAL;
		len += strnlen(parts[i], RDMX_REFLECTION_MAX_FILE + 1);
		if (len > RDMX_REFLECTION_MAX_FILE)
			return RDMX_E_INVAL;
	}
	text = malloc(len + 1);
	if (!text)
		return RDMX_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		size_t k = strlen(parts[i]);

		memcpy(text + at, parts[i], k);
		at += k;
	}
	text[at] = '\0';
	rc = rdmx_rpc_server_add_reflection(server, name, text);
	free(text);
	return rc;
}

/* ---- List ---- */

struct entry {
	const char *name; /* "package.Service/Method" */
	size_t svc_len;   /* up to the '/' */
};

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

static const char *file_of(const struct rdmx__builtins *b, const char *svc, size_t len)
{
	for (size_t i = 0; i < b->n_files; i++)
		for (size_t j = 0; j < b->files[i].n_services; j++)
			if (strlen(b->files[i].services[j]) == len &&
			    memcmp(b->files[i].services[j], svc, len) == 0)
				return b->files[i].name;
	return "";
}

/* One pass sizes (enc == NULL), the next writes. Entries are sorted, so a
 * service's methods are consecutive. */
static size_t list_encode(const struct rdmx__builtins *b, const struct entry *v, size_t n,
                          size_t n_svc, struct rdmx_enc *enc)
{
	size_t size = 0;

	if (n_svc == 0) {
		if (enc)
			rdmx__enc_map(enc, 0);
		return 1;
	}
	size += 1 + 1 + rdmx__size_hdr(n_svc);
	if (enc) {
		rdmx__enc_map(enc, 1);
		rdmx__enc_uint(enc, 1);
		rdmx__enc_array(enc, n_svc);
	}
	for (size_t i = 0; i < n;) {
		size_t j = i, svc_len = v[i].svc_len;
		const char *file = file_of(b, v[i].name, svc_len);
		size_t flen = strlen(file);

		while (j < n && v[j].svc_len == svc_len && !strncmp(v[j].name, v[i].name, svc_len))
			j++;
		/* ServiceInfo {1: name, 2: [methods], 3: file} */
		size += 1 + 1 + rdmx__size_str(svc_len) + 1 + rdmx__size_hdr(j - i);
		if (flen)
			size += 1 + rdmx__size_str(flen);
		if (enc) {
			rdmx__enc_map(enc, flen ? 3 : 2);
			rdmx__enc_uint(enc, 1);
			rdmx__enc_str(enc, v[i].name, svc_len);
			rdmx__enc_uint(enc, 2);
			rdmx__enc_array(enc, j - i);
		}
		for (size_t k = i; k < j; k++) {
			const char *m = v[k].name + svc_len + 1;

			size += rdmx__size_str(strlen(m));
			if (enc)
				rdmx__enc_str(enc, m, strlen(m));
		}
		if (flen && enc) {
			rdmx__enc_uint(enc, 3);
			rdmx__enc_str(enc, file, flen);
		}
		i = j;
	}
	return size;
}

static void respond_buf(struct rdmx_rpc_server_call *call, void *buf, size_t len,
                        struct rdmx_enc *e)
{
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(buf, len);

	if (rdmx__enc_finish(e))
		rdmx_rpc_respond(call, RDMX_RPC_INTERNAL, "reflection: encoding failed", NULL);
	else
		rdmx_rpc_respond(call, RDMX_RPC_OK, NULL, &p);
}

static void list_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx__builtins *b = arg;
	const struct rpc_method *m;
	struct entry *v = NULL;
	size_t n = 0, cap = 0, n_svc = 0, size;
	struct rdmx_enc e;
	uint32_t pos = 0;
	uint8_t *buf;

	/* ListRequest has no fields; unknown ones are ignored, garbage is not */
	if (decode_empty_request(req, len)) {
		rdmx_rpc_respond(call, RDMX_RPC_INVALID_ARGUMENT, "malformed ListRequest", NULL);
		return;
	}
	while ((m = rdmx__map_next(&b->server->methods, &pos, NULL))) {
		const char *slash = m->name ? strchr(m->name, '/') : NULL;

		if (!slash || slash == m->name)
			continue; /* registered without a full name: nothing to list */
		if (n == cap) {
			struct entry *grown = realloc(v, (cap ? cap * 2 : 16) * sizeof(*v));

			if (!grown)
				goto nomem;
			v = grown;
			cap = cap ? cap * 2 : 16;
		}
		v[n].name = m->name;
		v[n].svc_len = (size_t)(slash - m->name);
		n++;
	}
	if (n)
		qsort(v, n, sizeof(*v), entry_cmp);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || v[i].svc_len != v[i - 1].svc_len ||
		    strncmp(v[i].name, v[i - 1].name, v[i].svc_len))
			n_svc++;
	size = list_encode(b, v, n, n_svc, NULL);
	buf = malloc(size);
	if (!buf)
		goto nomem;
	rdmx__enc_init(&e, buf, size);
	list_encode(b, v, n, n_svc, &e);
	respond_buf(call, buf, size, &e);
	free(buf);
	free(v);
	return;
nomem:
	free(v);
	rdmx_rpc_respond(call, RDMX_RPC_RESOURCE_EXHAUSTED, "reflection: out of memory", NULL);
}

/* ---- FileContaining ---- */

static const struct rdmx__refl_file *find_file(const struct rdmx__builtins *b, const char *sym,
                                               size_t len)
{
	const char *slash = memchr(sym, '/', len);
	size_t svc_len = slash ? (size_t)(slash - sym) : len;

	for (size_t i = 0; i < b->n_files; i++)
		if (strlen(b->files[i].name) == len && memcmp(b->files[i].name, sym, len) == 0)
			return &b->files[i];
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < b->n_files; i++)
			for (size_t j = 0; j < b->files[i].n_services; j++)
				if (strlen(b->files[i].services[j]) == svc_len &&
				    memcmp(b->files[i].services[j], sym, svc_len) == 0)
					return &b->files[i];
		/* "package.Service.Method" (gRPC reflection's spelling) */
		if (pass == 0 && !slash) {
			const char *dot = NULL;

			for (size_t k = 0; k < len; k++)
				if (sym[k] == '.')
					dot = sym + k;
			if (!dot)
				break;
			svc_len = (size_t)(dot - sym);
		}
	}
	return NULL;
}

static const struct rdmx__refl_file *file_named(const struct rdmx__builtins *b, const char *name)
{
	for (size_t i = 0; i < b->n_files; i++)
		if (strcmp(b->files[i].name, name) == 0)
			return &b->files[i];
	return NULL;
}

static void file_handler(struct rdmx_rpc_server_call *call, const void *req, size_t len, void *arg)
{
	struct rdmx__builtins *b = arg;
	const struct rdmx__refl_file **out;
	const struct rdmx__refl_file *f;
	const char *sym;
	size_t n_sym, n = 0, size;
	struct rdmx_enc e;
	uint8_t *buf;
	char why[REFL_MAX_SYMBOL + 64];

	if (rdmx__builtins_decode_str1(req, len, &sym, &n_sym) || n_sym > REFL_MAX_SYMBOL) {
		rdmx_rpc_respond(call, RDMX_RPC_INVALID_ARGUMENT, "malformed FileContainingRequest",
		                 NULL);
		return;
	}
	f = find_file(b, sym, n_sym);
	if (!f) {
		snprintf(why, sizeof(why), "no IDL file holds \"%.*s\"", (int)n_sym, sym);
		rdmx_rpc_respond(call, RDMX_RPC_NOT_FOUND, why, NULL);
		return;
	}
	/* the file, then what it imports, breadth first, each once */
	out = calloc(b->n_files, sizeof(*out));
	if (!out) {
		rdmx_rpc_respond(call, RDMX_RPC_RESOURCE_EXHAUSTED, "reflection: out of memory",
		                 NULL);
		return;
	}
	out[n++] = f;
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < out[i]->n_imports; j++) {
			const struct rdmx__refl_file *g = file_named(b, out[i]->imports[j]);
			bool seen = false;

			for (size_t k = 0; g && k < n; k++)
				seen = seen || out[k] == g;
			if (g && !seen)
				out[n++] = g;
		}
	}
	/* FileContainingResponse {1: [File {1: name, 2: source}]} */
	size = 1 + 1 + rdmx__size_hdr(n);
	for (size_t i = 0; i < n; i++)
		size += 1 + 1 + rdmx__size_str(strlen(out[i]->name)) + 1 +
		        rdmx__size_str(strlen(out[i]->text));
	buf = malloc(size);
	if (!buf) {
		free(out);
		rdmx_rpc_respond(call, RDMX_RPC_RESOURCE_EXHAUSTED, "reflection: out of memory",
		                 NULL);
		return;
	}
	rdmx__enc_init(&e, buf, size);
	rdmx__enc_map(&e, 1);
	rdmx__enc_uint(&e, 1);
	rdmx__enc_array(&e, n);
	for (size_t i = 0; i < n; i++) {
		rdmx__enc_map(&e, 2);
		rdmx__enc_uint(&e, 1);
		rdmx__enc_str(&e, out[i]->name, strlen(out[i]->name));
		rdmx__enc_uint(&e, 2);
		rdmx__enc_str(&e, out[i]->text, strlen(out[i]->text));
	}
	respond_buf(call, buf, size, &e);
	free(buf);
	free(out);
}
