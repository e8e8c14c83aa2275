/* rdmx-call: call any method of an rdmx RPC server with JSON (grpcurl-like).
 *
 *   rdmx-call [options] ADDR list [SERVICE]
 *   rdmx-call [options] ADDR package.Service/Method ['{json}' | @FILE | -]
 *   rdmx-call [options] ADDR describe SERVICE_OR_METHOD
 *
 * ADDR is HOST:PORT of the server's plain rdmx listener, or — with --ca,
 * --cert and --key — of its secure bootstrap endpoint (mutual TLS).
 * Without --proto, the request and reply schemas come from the server's
 * reflection service (rdmx.reflection.v1.Reflection/FileContaining);
 * with --proto FILE they come from the local IDL file.
 * docs/guide-rpc.md has the JSON mapping and examples.
 *
 * Exit status: 0 OK; 1 failure (connection, schema, JSON); 2 usage;
 * 64 + the RPC status code when the server answered another status
 * (like grpcurl). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rdmx/health.h>
#include <rdmx/reflection.h>
#include <rdmx/registry.h>
#include <rdmx/rpc.h>
#include <rdmx/status.h>
#include <rdmx/pe.h>

#include "callstream.h"
#include "cli.h"
#include "json.h"
#include "mp.h"
#include "pbjson.h"
#include "rpcnet.h"

#define MAX_INCLUDES 32

struct opts {
	const char *proto;
	const char *includes[MAX_INCLUDES];
	size_t n_includes;
	struct rpcnet_tls tls;
	bool secure, verbose;
	int timeout_ms;
	uint64_t deadline_ns; /* -max-time: the whole call's end; 0: none */
	const char *addr, *what, *data;
	const char *data_opt;           /* -d: the requests ("@": standard input) */
	struct rdmx_rpc_md headers;     /* -H */
	const char *registry, *service; /* --registry URL --service NAME: no ADDR */
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: rdmx-call [options] ADDR list [SERVICE]\n"
	        "       rdmx-call [options] ADDR package.Service/Method ['{json}' | @FILE | -]\n"
	        "       rdmx-call [options] ADDR describe SERVICE_OR_METHOD\n"
	        "       rdmx-call [options] --registry ADDRESS --service NAME list|METHOD ...\n"
	        "  ADDR                      HOST:PORT of the server's rdmx listener, or of its\n"
	        "                            secure bootstrap endpoint when --ca/--cert/--key\n"
	        "                            (or $RDMX_CA, $RDMX_CERT, $RDMX_KEY) are given\n"
	        "      --registry ADDRESS    find the server in the registry instead of ADDR:\n"
	        "                            HOST:PORT, rdmx://HOST:PORT or\n"
	        "                            etcd://HOST:PORT[,HOST:PORT...] ($RDMX_REGISTRY)\n"
	        "      --service NAME        with --registry: the service; one live member is\n"
	        "                            picked (the less loaded of two at random), a member\n"
	        "                            that cannot be reached is skipped for the next;\n"
	        "                            a call whose request never reached the server, or\n"
	        "                            of an idempotent method, goes again on another\n"
	        "                            member (within the timeout and a retry budget)\n"
	        "      --proto FILE          the IDL of the method (default: ask the server's\n"
	        "                            reflection service)\n"
	        "  -I, --import-path DIR     where --proto's imports are found (repeatable)\n"
	        "      --ca FILE             CA certificate (PEM, $RDMX_CA)\n"
	        "      --cert FILE           this node's certificate (PEM, $RDMX_CERT)\n"
	        "      --key FILE            its private key (PEM, $RDMX_KEY)\n"
	        "      --crl FILE            certificate revocation list (PEM)\n"
	        "      --allow-insecure-key  accept a private key file group or others can read\n"
	        "      --plain, --plaintext, -plaintext\n"
	        "                            the plain listener even when $RDMX_CA, $RDMX_CERT\n"
	        "                            and $RDMX_KEY are set; without TLS files the plain\n"
	        "                            listener is used too\n"
	        "      --server-name PATTERN the name the server's certificate must carry\n"
	        "                            (default '*': any certificate of the CA)\n"
	        "  -d DATA                   the request messages: JSON values one after the\n"
	        "                            other, one request each; '@' reads them from\n"
	        "                            stdin as the call goes (streams)\n"
	        "  -H 'KEY: VALUE'           request metadata (repeatable)\n"
	        "      --device NAME         the device ($RDMX_DEVICE)\n"
	        "      --timeout-ms N        connection and call deadline (default 10000)\n"
	        "      --max-time, -max-time SECONDS\n"
	        "                            the whole call's deadline (a decimal number)\n"
	        "  -v, --verbose             the request metadata, response headers and\n"
	        "                            trailers on stdout; device, status and latency\n"
	        "                            on stderr\n" RDMX_CLI_HELP_COMMON
	        "The plain cm flow (no TLS) is unauthenticated and unencrypted: use it only\n"
	        "on a trusted network.\n"
	        "The request is -d DATA, or the JSON argument ('{}' when absent), @FILE, or -\n"
	        "(stdin); every response message is printed as it arrives. describe prints a\n"
	        "service or method from the server's reflection service.\n"
	        "An option takes its value after a space or an '='; grpcurl's single-dash\n"
	        "long options (-plaintext, -max-time, -proto, -import-path) work too.\n"
	        "Exit status: 0 OK; 1 failure; 2 usage error; 64 + RPC status code otherwise.\n");
}

enum {
	A_PROTO = RDMX_CLI_OPT_VERSION + 1,
	A_PLAIN,
	A_SERVER_NAME,
	A_TIMEOUT,
	A_REGISTRY,
	A_SERVICE,
	A_DEVICE,
	A_MAX_TIME,
};

static const struct option long_options[] = {
    RDMX_CLI_LONGOPTS_STD,
    {"proto", required_argument, NULL, A_PROTO},
    {"import-path", required_argument, NULL, 'I'},
    RDMX_CLI_LONGOPTS_TLS,
    {"plain", no_argument, NULL, A_PLAIN},
    {"plaintext", no_argument, NULL, A_PLAIN},
    {"server-name", required_argument, NULL, A_SERVER_NAME},
    {"device", required_argument, NULL, A_DEVICE},
    {"max-time", required_argument, NULL, A_MAX_TIME},
    {"timeout-ms", required_argument, NULL, A_TIMEOUT},
    {"registry", required_argument, NULL, A_REGISTRY},
    {"service", required_argument, NULL, A_SERVICE},
    {"verbose", no_argument, NULL, 'v'},
    {NULL, 0, NULL, 0},
};

/* 0 parsed, 1 help / version printed, -1 usage error (said) */
static int parse_args(int argc, char **argv, struct opts *o)
{
	struct rdmx_cli_tls tls = {NULL, NULL, NULL, NULL, false};
	const char *pos[3];
	bool plain = false;
	int n_pos = 0, c;
	long v;

	o->timeout_ms = 10000;
	rdmx_rpc_md_init(&o->headers);
	rdmx_cli_reset();
	while ((c = rdmx_cli_getopt("rdmx-call", argc, argv, "hI:d:H:v", long_options, true)) !=
	       -1) {
		if (rdmx_cli_tls_opt(&tls, c, optarg))
			continue;
		if (rdmx_cli_std_opt("rdmx-call", c, usage))
			return 1;
		switch (c) {
		case 'v':
			o->verbose = true;
			break;
		case A_PROTO:
			o->proto = optarg;
			break;
		case 'I':
			if (o->n_includes == MAX_INCLUDES) {
				fprintf(stderr, "rdmx-call: at most %d -I\n", MAX_INCLUDES);
				return -1;
			}
			o->includes[o->n_includes++] = optarg;
			break;
		case A_PLAIN:
			plain = true;
			break;
		case A_SERVER_NAME:
			o->tls.peer = optarg;
			break;
		case A_DEVICE:
			rdmx_cli_set_device(optarg);
			break;
		case 'd':
			o->data_opt = optarg;
			break;
		case 'H':
			if (callmd_parse_header(optarg, &o->headers))
				return -1;
			break;
		case A_MAX_TIME: {
			char *end = NULL;
			double sec;

			errno = 0;
			sec = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(sec > 0) || sec > 86400) {
				fprintf(stderr,
				        "rdmx-call: --max-time: want seconds (a decimal number "
				        "above 0, at most 86400), got '%s'\n",
				        optarg);
				return -1;
			}
			o->deadline_ns = rdmx_pe_now_ns() + (uint64_t)(sec * 1e9);
			o->timeout_ms = (int)(sec * 1000.0 + 0.999);
			if (o->timeout_ms < 1)
				o->timeout_ms = 1;
			break;
		}
		case A_TIMEOUT:
			if (rdmx_cli_parse_long("rdmx-call", "--timeout-ms", optarg, 1, 600000, &v))
				return -1;
			o->timeout_ms = (int)v;
			break;
		case A_REGISTRY:
			o->registry = optarg;
			break;
		case A_SERVICE:
			o->service = optarg;
			break;
		default:
			return -1;
		}
	}
	for (int i = optind; i < argc; i++) {
		if (n_pos == 3) {
			fprintf(stderr, "rdmx-call: too many arguments (%s)\n", argv[i]);
			return -1;
		}
		pos[n_pos++] = argv[i];
	}
	if (plain && (tls.ca || tls.cert || tls.key)) {
		fprintf(stderr,
		        "rdmx-call: --plain (--plaintext) and --ca/--cert/--key exclude each "
		        "other\n");
		return -1;
	}
	if (!plain)
		rdmx_cli_tls_env(&tls);
	o->tls.ca = tls.ca;
	o->tls.cert = tls.cert;
	o->tls.key = tls.key;
	o->tls.crl = tls.crl;
	o->tls.allow_insecure_key = tls.allow_insecure_key;
	if (o->service) {
		if (!o->registry)
			o->registry = rdmx_cli_registry_env();
		if (!o->registry) {
			fprintf(stderr,
			        "rdmx-call: --service needs --registry (or $RDMX_REGISTRY)\n");
			return -1;
		}
		if (n_pos < 1 || n_pos > 2) {
			fprintf(stderr,
			        "rdmx-call: with --service: want list|package.Service/Method "
			        "(no ADDR; rdmx-call --help)\n");
			return -1;
		}
		o->what = pos[0];
		o->data = n_pos == 2 ? pos[1] : NULL;
	} else if (o->registry) {
		fprintf(stderr, "rdmx-call: --registry needs --service NAME\n");
		return -1;
	} else if (n_pos < 2) {
		fprintf(stderr, "rdmx-call: want ADDR list|package.Service/Method "
		                "(rdmx-call --help)\n");
		return -1;
	} else {
		o->addr = pos[0];
		o->what = pos[1];
		o->data = n_pos == 3 ? pos[2] : NULL;
	}
	if (strcmp(o->what, "describe") == 0 && !o->data) {
		fprintf(stderr, "rdmx-call: describe wants SERVICE_OR_METHOD\n");
		return -1;
	}
	if (o->data_opt && o->data && strcmp(o->what, "describe") != 0) {
		fprintf(stderr,
		        "rdmx-call: give the request with -d or as an argument, not both\n");
		return -1;
	}
	if (o->service && (rdmx_rpc_md_count(&o->headers) || o->data_opt)) {
		fprintf(stderr, "rdmx-call: -H and -d are for ADDR calls, not --service\n");
		return -1;
	}
	if (o->tls.ca || o->tls.cert || o->tls.key) {
		if (!o->tls.ca || !o->tls.cert || !o->tls.key) {
			fprintf(stderr, "rdmx-call: TLS needs all of --ca, --cert and --key\n");
			return -1;
		}
		o->secure = true;
	}
	return 0;
}

static uint64_t now_ns(void)
{
	return rdmx_pe_now_ns();
}

/* what is left of -max-time (at least 1 us, so that it ends the call with
 * DEADLINE_EXCEEDED), else --timeout-ms */
static uint64_t call_timeout_us(const struct opts *o)
{
	uint64_t now = now_ns();

	if (!o->deadline_ns)
		return (uint64_t)o->timeout_ms * 1000u;
	return o->deadline_ns > now + 1000u ? (o->deadline_ns - now) / 1000u : 1u;
}

/* With --service, calls go through the balancer: another member when the
 * request never reached the server, or when the method is idempotent.
 * device: that of the member connection the last attempt went on (member_ep
 * copies it: the connection may be gone when the call returns). */
static struct {
	struct rdmx_registry_balancer *b;
	char device[64];
} by_service;

/* -v's line for a call() on c (NULL: through by_service.b, with the
 * retries it took: the balancer's count now less retries0). */
static void say_call(struct rpcnet_client *c, const char *method, uint64_t t0, size_t len,
                     const struct rdmx_rpc_reply *reply, uint64_t retries0)
{
	char tail[40] = "";

	if (by_service.b)
		snprintf(tail, sizeof(tail), ", %llu retries",
		         (unsigned long long)(rdmx_registry_balancer_get_retries(by_service.b) -
		                              retries0));
	callmd_print_status(method, reply->code, c ? rpcnet_client_device(c) : by_service.device,
	                    t0, len, reply->len, tail);
}

/* One call on c (NULL: through by_service.b). Returns 0 when a status came
 * back (reply->code tells; with -v, the device, status and latency on
 * stderr), 1 when the call could not be made (said). */
static int call(struct rpcnet_client *c, const struct opts *o, const char *method, const void *req,
                size_t len, bool idempotent, struct rdmx_rpc_reply *reply)
{
	struct rdmx_rpc_call_opts co = {call_timeout_us(o), false};
	struct rdmx_rpc_payload p = rdmx_rpc_bytes(req, len);
	uint64_t t0 = now_ns();
	uint64_t retries = rdmx_registry_balancer_get_retries(by_service.b);
	int rc =
	    by_service.b
	        ? rdmx_registry_balancer_call(by_service.b, rdmx_rpc_method_id(method), &p, &co,
	                                      idempotent, reply)
	        : rdmx_rpc_call(rpcnet_client_rpc(c), rdmx_rpc_method_id(method), &p, &co, reply);

	if (rc) {
		fprintf(stderr, "rdmx-call: %s: %s\n", method, rdmx_strerror(rc));
		return 1;
	}
	if (o->verbose)
		say_call(c, method, t0, len, reply, retries);
	return 0;
}

static int status_exit(const struct rdmx_rpc_reply *r)
{
	return callmd_status_exit(r->code, r->message);
}

/* ---- list ---- */

static bool mp_str_eq(const struct rdmx_mp_obj *o, const char *s)
{
	return o->type == RDMX_MP_STR && o->via.str.size == strlen(s) &&
	       memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

static int cmd_list(struct rpcnet_client *c, const struct opts *o)
{
	static const unsigned char empty[] = {0x80};
	const char *only = o->data;
	struct rdmx_rpc_reply r = {0};
	struct rdmx_mp_doc u;
	size_t off = 0;
	int ret = 1, found = 0;

	if (call(c, o, RDMX_REFLECTION_LIST_NAME, empty, sizeof(empty), true, &r))
		return 1;
	if (r.code != RDMX_RPC_OK) {
		ret = status_exit(&r);
		rdmx_rpc_reply_fini(&r);
		return ret;
	}
	rdmx_mp_doc_init(&u);
	if (r.len == 0 || rdmx_mp_parse(&u, r.data, r.len, &off) != 0 || off != r.len ||
	    u.data.type != RDMX_MP_MAP) {
		fprintf(stderr, "rdmx-call: malformed ListResponse\n");
		goto out;
	}
	/* ListResponse {1: [ServiceInfo {1: name, 2: [methods], 3: file}]} */
	for (uint32_t i = 0; i < u.data.via.map.size; i++) {
		const struct rdmx_mp_kv *kv = &u.data.via.map.ptr[i];

		if (kv->key.type != RDMX_MP_UINT || kv->key.via.u64 != 1 ||
		    kv->val.type != RDMX_MP_ARRAY)
			continue;
		for (uint32_t s = 0; s < kv->val.via.array.size; s++) {
			const struct rdmx_mp_obj *svc = &kv->val.via.array.ptr[s];
			const struct rdmx_mp_obj *name = NULL, *methods = NULL;

			if (svc->type != RDMX_MP_MAP)
				continue;
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
				continue;
			found++;
			printf("%.*s\n", (int)name->via.str.size, name->via.str.ptr);
			for (uint32_t m = 0; methods && m < methods->via.array.size; m++) {
				const struct rdmx_mp_obj *mo = &methods->via.array.ptr[m];

				if (mo->type == RDMX_MP_STR)
					printf("  %.*s/%.*s\n", (int)name->via.str.size,
					       name->via.str.ptr, (int)mo->via.str.size,
					       mo->via.str.ptr);
			}
		}
	}
	if (only && !found)
		fprintf(stderr, "rdmx-call: the server has no service %s\n", only);
	else
		ret = 0;
out:
	rdmx_mp_doc_fini(&u);
	rdmx_rpc_reply_fini(&r);
	return ret;
}

/* ---- schema from the server (reflection) ---- */

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

static int write_idl(struct tmpdir *t, const char *name, size_t nlen, const char *src, size_t slen,
                     char *first, size_t first_len)
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
	if (first && !first[0])
		snprintf(first, first_len, "%s", path);
	return 0;
}

static int schema_from_server(struct rpcnet_client *c, const struct opts *o, const char *service,
                              struct pbschema *schema)
{
	struct rdmx_rpc_reply r = {0};
	struct tmpdir t = {{0}, {{0}}, 0};
	char first[300] = "";
	const char *incl[1];
	unsigned char req[300];
	struct rdmx_mp_doc u;
	size_t off = 0, sl = strlen(service);
	int ret = -1;

	if (sl > 250)
		return -1;
	/* FileContainingRequest {1: symbol} */
	req[0] = 0x81;
	req[1] = 0x01;
	req[2] = 0xd9;
	req[3] = (unsigned char)sl;
	memcpy(req + 4, service, sl);
	if (call(c, o, RDMX_REFLECTION_FILE_CONTAINING_NAME, req, 4 + sl, true, &r))
		return -1;
	if (r.code != RDMX_RPC_OK) {
		fprintf(stderr,
		        "rdmx-call: the server gave no schema for %s (%s%s%s); give --proto FILE\n",
		        service, rdmx_rpc_code_name(r.code), r.message ? ": " : "",
		        r.message ? r.message : "");
		rdmx_rpc_reply_fini(&r);
		return -1;
	}
	snprintf(t.root, sizeof(t.root), "/tmp/rdmx-call-XXXXXX");
	if (!mkdtemp(t.root)) {
		fprintf(stderr, "rdmx-call: mkdtemp: %s\n", strerror(errno));
		rdmx_rpc_reply_fini(&r);
		return -1;
	}
	rdmx_mp_doc_init(&u);
	if (rdmx_mp_parse(&u, r.data, r.len, &off) != 0 || off != r.len ||
	    u.data.type != RDMX_MP_MAP)
		goto bad;
	/* FileContainingResponse {1: [File {1: name, 2: source}]} */
	for (uint32_t i = 0; i < u.data.via.map.size; i++) {
		const struct rdmx_mp_kv *kv = &u.data.via.map.ptr[i];

		if (kv->key.type != RDMX_MP_UINT || kv->key.via.u64 != 1 ||
		    kv->val.type != RDMX_MP_ARRAY)
			continue;
		for (uint32_t k = 0; k < kv->val.via.array.size; k++) {
			const struct rdmx_mp_obj *fo = &kv->val.via.array.ptr[k];
			const struct rdmx_mp_obj *name = NULL, *src = NULL;

			if (fo->type != RDMX_MP_MAP)
				goto bad;
			for (uint32_t m = 0; m < fo->via.map.size; m++) {
				const struct rdmx_mp_kv *f = &fo->via.map.ptr[m];

				if (f->key.type != RDMX_MP_UINT || f->val.type != RDMX_MP_STR)
					continue;
				if (f->key.via.u64 == 1)
					name = &f->val;
				else if (f->key.via.u64 == 2)
					src = &f->val;
			}
			if (!name || write_idl(&t, name->via.str.ptr, name->via.str.size,
			                       src ? src->via.str.ptr : "",
			                       src ? src->via.str.size : 0, first, sizeof(first))) {
				fprintf(stderr, "rdmx-call: the server sent an IDL file with an "
				                "unusable name\n");
				goto out;
			}
		}
	}
	if (!first[0])
		goto bad;
	incl[0] = t.root;
	if (pbschema_load(schema, first, incl, 1, stderr)) {
		fprintf(stderr, "rdmx-call: the server's IDL for %s does not parse\n", service);
		goto out;
	}
	ret = 0;
	goto out;
bad:
	fprintf(stderr, "rdmx-call: malformed FileContainingResponse\n");
out:
	rdmx_mp_doc_fini(&u);
	rdmx_rpc_reply_fini(&r);
	tmpdir_clean(&t);
	return ret;
}

/* ---- a method call ---- */

static char *read_all(FILE *f, size_t *len)
{
	struct jbuf b = {0};
	char tmp[65536];
	size_t n;

	while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
		jbuf_put(&b, tmp, n);
	if (ferror(f) || b.oom) {
		jbuf_free(&b);
		return NULL;
	}
	if (!b.data)
		jbuf_put(&b, "", 0);
	*len = b.len;
	return b.data;
}

static char *request_text(const char *data, size_t *len)
{
	char *text;
	FILE *f;

	if (!data) {
		*len = 2;
		return strdup("{}");
	}
	if (!strcmp(data, "-"))
		return read_all(stdin, len);
	if (data[0] != '@') {
		*len = strlen(data);
		return strdup(data);
	}
	f = fopen(data + 1, "rb");
	if (!f) {
		fprintf(stderr, "rdmx-call: %s: %s\n", data + 1, strerror(errno));
		return NULL;
	}
	text = read_all(f, len);
	fclose(f);
	return text;
}

/* The reply of a unary call made with call(): with -v, grpcurl's blocks
 * (as callstream_run prints them). Returns the exit status. */
static int print_reply(const struct opts *o, const struct gen_method *m,
                       const struct rdmx_rpc_reply *r)
{
	struct jbuf out = {0};
	char err[600];
	size_t got = 0;
	int ret = 0;

	if (o->verbose)
		callmd_print(stdout, "Response headers received:", r->headers);
	if (r->code == RDMX_RPC_OK &&
	    pbjson_decode(m->out, r->data, r->len, &out, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: reply (%s): %s\n", m->out->full_name, err);
		ret = 1;
	} else if (r->code == RDMX_RPC_OK) {
		callmd_print_response(&out, o->verbose);
		got = 1;
	}
	jbuf_free(&out);
	if (o->verbose) {
		callmd_print(stdout, "Response trailers received:", r->trailers);
		callmd_print_counts(1, got);
	}
	if (r->code != RDMX_RPC_OK)
		return status_exit(r);
	return ret || fflush(stdout) ? 1 : 0;
}

/* A unary call of m through the balancer (--service): the request from the
 * argument, the reply printed. Returns the exit status. */
static int service_unary(const struct opts *o, const struct gen_method *m, const char *full)
{
	struct rdmx_rpc_reply r = {0};
	struct jbuf req = {0};
	json_t *j = NULL;
	char err[600], *text;
	size_t tlen = 0;
	int ret = 1;

	if (m->client_streaming || m->server_streaming) {
		fprintf(stderr, "rdmx-call: %s is a streaming method: call it at ADDR\n", full);
		return 1;
	}
	text = request_text(o->data, &tlen);
	if (!text)
		return 1;
	if (json_parse(text, tlen, &j, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: request JSON: %s\n", err);
		goto out;
	}
	if (pbjson_encode(m->in, j, &req, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: request (%s): %s\n", m->in->full_name, err);
		goto out;
	}
	if (o->verbose)
		callmd_print(stdout, "Request metadata to send:", &o->headers);
	if (call(NULL, o, full, req.data, req.len, m->idempotent, &r) == 0)
		ret = print_reply(o, m, &r);
out:
	rdmx_rpc_reply_fini(&r);
	jbuf_free(&req);
	json_free(j);
	free(text);
	return ret;
}

/* A call of m at ADDR (any kind: callstream_run), the requests from -d or
 * the argument. Returns the exit status. */
static int addr_call(struct rpcnet_client *c, const struct opts *o, const struct gen_method *m,
                     const char *full)
{
	struct callstream_opts co = {call_timeout_us(o), &o->headers, o->verbose, o->deadline_ns,
	                             rpcnet_client_device(c)};
	struct callsrc src;
	char *text = NULL;
	size_t tlen = 0;
	int ret;

	if (o->data_opt && strcmp(o->data_opt, "@") == 0) {
		callsrc_init_fd(&src, STDIN_FILENO);
	} else if (o->data_opt) {
		callsrc_init_text(&src, o->data_opt, strlen(o->data_opt));
	} else if (o->data) {
		text = request_text(o->data, &tlen);
		if (!text)
			return 1;
		callsrc_init_text(&src, text, tlen);
	} else {
		callsrc_init_text(&src, "", 0); /* "{}" unless client-streaming */
	}
	ret = callstream_run(rpcnet_client_rpc(c), m, full, &src, &co);
	callsrc_fini(&src);
	free(text);
	return ret;
}

static int cmd_call(struct rpcnet_client *c, const struct opts *o)
{
	char full[512], svc[512];
	const struct gen_method *m;
	struct pbschema schema;
	char *slash;
	int ret = 1;

	memset(&schema, 0, sizeof(schema));
	/* "package.Service/Method" or "package.Service.Method" */
	snprintf(full, sizeof(full), "%s", o->what);
	if (!strchr(full, '/')) {
		char *dot = strrchr(full, '.');

		if (dot)
			*dot = '/';
	}
	slash = strchr(full, '/');
	if (!slash || slash == full || !slash[1]) {
		fprintf(stderr, "rdmx-call: %s: expected package.Service/Method\n", o->what);
		return 2;
	}
	snprintf(svc, sizeof(svc), "%.*s", (int)(slash - full), full);
	if (o->proto ? pbschema_load(&schema, o->proto, o->includes, o->n_includes, stderr)
	             : schema_from_server(c, o, svc, &schema))
		goto out;
	m = pbschema_method(&schema, full);
	if (!m) {
		fprintf(stderr, "rdmx-call: %s: no such method in %s\n", full,
		        o->proto ? o->proto : "the server's IDL");
		goto out;
	}
	ret = by_service.b ? service_unary(o, m, full) : addr_call(c, o, m, full);
out:
	pbschema_fini(&schema);
	return ret;
}

/* grpcurl spells its long options with one dash (-plaintext, -max-time 5,
 * -max-time=5, -proto F, -import-path D): taken as their "--" forms
 * (before a "--", so that an operand is never rewritten). */
static char alias_buf[64][512];

static void single_dash_aliases(int argc, char **argv)
{
	static const char *const names[] = {"plaintext", "max-time", "proto", "import-path"};
	int k = 0;

	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		const char *a = argv[i];

		if (a[0] != '-' || a[1] == '-' || k == 64)
			continue;
		for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
			size_t l = strlen(names[n]);

			if (strncmp(a + 1, names[n], l) == 0 &&
			    (a[1 + l] == '\0' || a[1 + l] == '=') &&
			    strlen(a) + 2 < sizeof(alias_buf[0])) {
				snprintf(alias_buf[k], sizeof(alias_buf[0]), "-%s", a);
				argv[i] = alias_buf[k++];
				break;
			}
		}
	}
}

/* ---- describe (grpcurl-like) ---- */

static const struct gen_service *find_service(const struct pbschema *schema, const char *name)
{
	for (int i = 0; i < schema->ctx.files.n; i++) {
		const struct gen_file *f = schema->ctx.files.items[i];

		for (int k = 0; k < f->services.n; k++) {
			const struct gen_service *sv = f->services.items[k];

			if (strcmp(sv->full_name, name) == 0)
				return sv;
		}
	}
	return NULL;
}

static void print_rpc(const char *indent, const struct gen_method *m)
{
	printf("%srpc %s ( %s.%s ) returns ( %s.%s );\n", indent, m->name,
	       m->client_streaming ? "stream " : "", m->in->full_name,
	       m->server_streaming ? "stream " : "", m->out->full_name);
}

static int cmd_describe(struct rpcnet_client *c, const struct opts *o)
{
	const char *sym = o->data;
	const struct gen_service *sv;
	const struct gen_method *m;
	struct pbschema schema;
	char name[512];
	int ret = 1;

	memset(&schema, 0, sizeof(schema));
	snprintf(name, sizeof(name), "%s", sym);
	if (o->proto ? pbschema_load(&schema, o->proto, o->includes, o->n_includes, stderr)
	             : schema_from_server(c, o, name, &schema))
		goto out;
	sv = find_service(&schema, name);
	if (sv) {
		printf("%s is a service:\n", sv->full_name);
		printf("service %s {\n", sv->name);
		for (int i = 0; i < sv->methods.n; i++)
			print_rpc("  ", sv->methods.items[i]);
		printf("}\n");
		ret = 0;
		goto out;
	}
	m = pbschema_method(&schema, name);
	if (m) {
		char *slash = strchr(name, '/');

		if (slash)
			*slash = '.';
		printf("%s is a method:\n", name);
		print_rpc("", m);
		ret = 0;
		goto out;
	}
	fprintf(stderr, "rdmx-call: Symbol not found: %s\n", sym);
out:
	fflush(stdout);
	pbschema_fini(&schema);
	return ret;
}

/* ---- --registry --service: a member picked by the library's balancer ---- */

struct member_arg {
	const struct opts *o;
};

static int member_connect(const struct rdmx_registry_member *m, void *arg, void **conn)
{
	const struct opts *o = ((struct member_arg *)arg)->o;
	struct rpcnet_tls tls = o->tls;
	struct rpcnet_client *c = NULL;
	char host[256], err[512];
	uint16_t port;
	int rc;

	if (rdmx_cli_split_addr(m->endpoint, host, sizeof(host), &port) || port == 0)
		return RDMX_E_INVAL;
	if (!tls.peer)
		tls.peer = m->owner; /* the certificate that registered it */
	rc = rpcnet_client_connect(host, port, o->secure ? &tls : NULL, "rdmx-call", o->timeout_ms,
	                           &c, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "rdmx-call: %s: %s\n", m->endpoint, err);
		return rc;
	}
	if (o->verbose)
		fprintf(stderr, "rdmx-call: %s member %s (%s) on device %s\n", o->service,
		        m->endpoint, m->owner, rpcnet_client_device(c));
	*conn = c;
	return 0;
}

static struct rdmx_rpc_ep *member_ep(void *conn, void *arg)
{
	(void)arg;
	snprintf(by_service.device, sizeof(by_service.device), "%s", rpcnet_client_device(conn));
	return rpcnet_client_rpc(conn);
}

static void member_disconnect(void *conn, void *arg)
{
	struct rpcnet_client *c = conn;

	(void)arg;
	rpcnet_client_close(&c);
}

/* Picks a member, skipping those that cannot be reached (their requests
 * never went out: always retried), within --timeout-ms. */
static int run_on_service(const struct opts *o)
{
	struct rdmx_registry_balancer_opts bo;
	struct rdmx_registry_balancer *b = NULL;
	struct rdmx_tls_config *cfg = NULL;
	struct member_arg arg = {o};
	uint64_t deadline = now_ns() / 1000000u + (uint64_t)o->timeout_ms, member = 0;
	char err[512];
	void *conn = NULL;
	int ret;

	if (!o->secure) {
		fprintf(stderr, "rdmx-call: --registry needs --ca, --cert and --key\n");
		return 2;
	}
	{
		struct rpcnet_tls reg_tls = o->tls;

		reg_tls.peer = "*";
		cfg = rpcnet_tls_config(&reg_tls, err, sizeof(err));
	}
	if (!cfg) {
		fprintf(stderr, "rdmx-call: %s\n", err);
		return 1;
	}
	rdmx_registry_balancer_opts_init(&bo);
	bo.url = o->registry;
	bo.cfg = cfg;
	bo.service = o->service;
	bo.timeout_ms = o->timeout_ms;
	bo.pick = RDMX_REGISTRY_PICK_TWO_CHOICES;
	bo.connect = member_connect;
	bo.disconnect = member_disconnect;
	bo.ep = member_ep;
	bo.arg = &arg;
	ret = rdmx_registry_balancer_create(&bo, &b);
	if (ret) {
		fprintf(stderr, "rdmx-call: registry %s: %s\n", o->registry, rdmx_strerror(ret));
		rdmx_tls_config_destroy(&cfg);
		return 1;
	}
	for (;;) {
		uint32_t wait_ms = 0;

		ret = rdmx_registry_balancer_pick(b, &conn, &member, &wait_ms);
		if (ret != RDMX_E_AGAIN || now_ns() / 1000000u + wait_ms >= deadline ||
		    !rdmx_registry_balancer_may_retry(b, RDMX_E_CONN_REFUSED, 0, 0))
			break;
		/* every member is backing off: wait for the first (bounded) */
		{
			struct timespec ts = {wait_ms / 1000, (long)(wait_ms % 1000) * 1000000L};

			nanosleep(&ts, NULL);
		}
	}
	if (ret) {
		fprintf(stderr, "rdmx-call: no member of %s %s: %s\n", o->service,
		        ret == RDMX_E_NOT_FOUND ? "is registered" : "can be reached",
		        rdmx_strerror(ret));
		ret = 1;
	} else {
		/* the picked member is given back: each call picks its own */
		rdmx_registry_balancer_done(b, member, 0);
		by_service.b = b;
		ret = strcmp(o->what, "list") == 0       ? cmd_list(NULL, o)
		      : strcmp(o->what, "describe") == 0 ? cmd_describe(NULL, o)
		                                         : cmd_call(NULL, o);
		by_service.b = NULL;
	}
	rdmx_registry_balancer_destroy(&b);
	rdmx_tls_config_destroy(&cfg);
	return ret;
}

int main(int argc, char **argv)
{
	struct rpcnet_client *c = NULL;
	struct opts o = {0};
	char host[256], err[512];
	uint16_t port;
	int ret;

	single_dash_aliases(argc, argv);
	ret = parse_args(argc, argv, &o);
	if (ret) {
		rdmx_rpc_md_fini(&o.headers);
		return ret > 0 ? 0 : 2;
	}
	if (o.service) {
		ret = run_on_service(&o);
		rdmx_rpc_md_fini(&o.headers);
		return ret;
	}
	if (!o.secure)
		rdmx_cli_warn_plain("rdmx-call");
	if (rdmx_cli_split_addr(o.addr, host, sizeof(host), &port) || !*host || port == 0) {
		fprintf(stderr, "rdmx-call: ADDR is HOST:PORT, got '%s'\n", o.addr);
		rdmx_rpc_md_fini(&o.headers);
		return 2;
	}
	if (rpcnet_client_connect(host, port, o.secure ? &o.tls : NULL, "rdmx-call", o.timeout_ms,
	                          &c, err, sizeof(err))) {
		fprintf(stderr, "rdmx-call: %s\n", err);
		rdmx_rpc_md_fini(&o.headers);
		return 1;
	}
	if (o.verbose)
		fprintf(stderr, "rdmx-call: connected to %s on device %s (%s)\n", o.addr,
		        rpcnet_client_device(c), o.secure ? "mutual TLS bootstrap" : "plain");
	ret = strcmp(o.what, "list") == 0       ? cmd_list(c, &o)
	      : strcmp(o.what, "describe") == 0 ? cmd_describe(c, &o)
	                                        : cmd_call(c, &o);
	rpcnet_client_close(&c);
	rdmx_rpc_md_fini(&o.headers);
	return ret;
}
