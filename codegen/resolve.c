/* rdmx-gen: name resolution (symbols, protoc's scoping rules, field and rpc
 * types) and the C names the emitters use; the resolver's entry point. Files
 * and imports are loaded in resolve_load.c, the semantic checks are in
 * resolve_checks.c. */
#include <stdlib.h>
#include <string.h>

#include "resolve.h"

/* ---- a string -> pointer table (open addressing) ---- */

static size_t hash(const char *s)
{
	return gen_fnv1a(s);
}

struct sym *gen_table_get(struct table *t, const char *name)
{
	size_t i;
	if (!t->cap)
		return NULL;
	for (i = hash(name) & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1))
		if (strcmp(t->slots[i]->name, name) == 0)
			return t->slots[i];
	return NULL;
}

void gen_table_put(struct gen_pool *pool, struct table *t, struct sym *s)
{
	size_t i;
	if ((t->n + 1) * 2 > t->cap) {
		struct table nt = {NULL, t->cap ? t->cap * 2 : 64, 0};
		nt.slots = gen_alloc(pool, sizeof(*nt.slots) * nt.cap);
		for (i = 0; i < t->cap; i++)
			if (t->slots[i])
				gen_table_put(pool, &nt, t->slots[i]);
		*t = nt;
	}
	for (i = hash(s->name) & (t->cap - 1); t->slots[i]; i = (i + 1) & (t->cap - 1))
		;
	t->slots[i] = s;
	t->n++;
}

/* t without the entries of f (a file dropped for its errors), rebuilt */
static void table_drop_file(struct gen_pool *pool, struct table *t, const struct gen_file *f)
{
	struct table nt = {NULL, 0, 0};
	size_t i;
	for (i = 0; i < t->cap; i++)
		if (t->slots[i] && t->slots[i]->file != f)
			gen_table_put(pool, &nt, t->slots[i]);
	*t = nt;
}

struct resolver *gen_resolver(struct gen_ctx *ctx)
{
	if (!ctx->priv) {
		struct resolver *r = gen_alloc(&ctx->pool, sizeof(*r));
		r->ctx = ctx;
		ctx->priv = r;
	}
	return ctx->priv;
}

/* ---- C names ---- */

static const char *const c_keywords[] = {
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Alignas",
    "_Alignof",
    "_Atomic",
    "_Bool",
    "_Complex",
    "_Generic",
    "_Imaginary",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
    /* C++ */
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "bitand",
    "bitor",
    "bool",
    "catch",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "compl",
    "concept",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "delete",
    "dynamic_cast",
    "explicit",
    "export",
    "false",
    "friend",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "reinterpret_cast",
    "requires",
    "static_assert",
    "static_cast",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typeid",
    "typename",
    "using",
    "virtual",
    "wchar_t",
    "xor",
    "xor_eq",
    /* common macros */
    "NULL",
    "EOF",
    "errno",
    "stdin",
    "stdout",
    "stderr",
    "assert",
    "offsetof",
    "unix",
    "linux",
    "i386",
    "complex",
    "imaginary",
    "noreturn",
    "static_assert",
    "BUFSIZ",
    "CHAR_BIT",
    "CHAR_MAX",
    "CHAR_MIN",
    "EXIT_FAILURE",
    "EXIT_SUCCESS",
    "FILENAME_MAX",
    "INT_MAX",
    "INT_MIN",
    "LLONG_MAX",
    "LLONG_MIN",
    "LONG_MAX",
    "LONG_MIN",
    "MB_CUR_MAX",
    "MB_LEN_MAX",
    "PATH_MAX",
    "RAND_MAX",
    "SCHAR_MAX",
    "SCHAR_MIN",
    "SHRT_MAX",
    "SHRT_MIN",
    "SIZE_MAX",
    "PTRDIFF_MAX",
    "PTRDIFF_MIN",
    "UCHAR_MAX",
    "UINT_MAX",
    "ULLONG_MAX",
    "ULONG_MAX",
    "USHRT_MAX",
    "WCHAR_MAX",
    "WCHAR_MIN",
    "INTPTR_MAX",
    "INTPTR_MIN",
    "UINTPTR_MAX",
    "INTMAX_MAX",
    "INTMAX_MIN",
    "UINTMAX_MAX",
    "INT8_MAX",
    "INT8_MIN",
    "INT16_MAX",
    "INT16_MIN",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "UINT8_MAX",
    "UINT16_MAX",
    "UINT32_MAX",
    "UINT64_MAX",
    "__bool_true_false_are_defined",
    "__STDC__",
    "__STDC_VERSION__",
    "__FILE__",
    "__LINE__",
    "__DATE__",
    "__TIME__",
    "__func__",
    "__cplusplus",
};

/* type names C and its standard headers already use: a top-level message or
 * enum of a file without package must not take them */
static const char *const c_type_names[] = {
    "size_t",    "ssize_t",  "ptrdiff_t", "max_align_t", "wchar_t",  "int8_t",       "int16_t",
    "int32_t",   "int64_t",  "uint8_t",   "uint16_t",    "uint32_t", "uint64_t",     "intptr_t",
    "uintptr_t", "intmax_t", "uintmax_t", "FILE",        "fpos_t",   "va_list",      "div_t",
    "ldiv_t",    "lldiv_t",  "time_t",    "clock_t",     "off_t",    "pid_t",        "mode_t",
    "uid_t",     "gid_t",    "float_t",   "double_t",    "jmp_buf",  "sig_atomic_t", "errno_t",
    "nullptr_t", "char16_t", "char32_t",  "mbstate_t",   "wint_t",   "locale_t",
};

/* functions declared by the system headers generated code includes
 * (<string.h>, <stdlib.h>; with the POSIX and GNU ones a default compile
 * sees): a top-level type of a file without package named so would be
 * redeclared as a different kind of symbol */
static const char *const c_function_names[] = {
    "abort",          "abs",       "aligned_alloc", "alloca",     "at_quick_exit", "atexit",
    "atof",           "atoi",      "atol",          "atoll",      "basename",      "bcopy",
    "bsearch",        "bzero",     "calloc",        "div",        "drand48",       "ecvt",
    "exit",           "fcvt",      "ffs",           "free",       "gcvt",          "getenv",
    "index",          "initstate", "labs",          "ldiv",       "llabs",         "lldiv",
    "lrand48",        "malloc",    "mblen",         "mbstowcs",   "mbtowc",        "memccpy",
    "memchr",         "memcmp",    "memcpy",        "memmem",     "memmove",       "mempcpy",
    "memrchr",        "memset",    "mkdtemp",       "mkstemp",    "mktemp",        "mrand48",
    "posix_memalign", "putenv",    "qsort",         "quick_exit", "rand",          "rand_r",
    "random",         "realloc",   "reallocarray",  "realpath",   "rindex",        "setenv",
    "setstate",       "srand",     "srand48",       "srandom",    "stpcpy",        "stpncpy",
    "strcasecmp",     "strcat",    "strchr",        "strcmp",     "strcoll",       "strcpy",
    "strcspn",        "strdup",    "strerror",      "strerror_r", "strlen",        "strncasecmp",
    "strncat",        "strncmp",   "strncpy",       "strndup",    "strnlen",       "strpbrk",
    "strrchr",        "strsep",    "strsignal",     "strspn",     "strstr",        "strtod",
    "strtof",         "strtok",    "strtok_r",      "strtol",     "strtold",       "strtoll",
    "strtoul",        "strtoull",  "strxfrm",       "system",     "unsetenv",      "valloc",
    "wcstombs",       "wctomb",    "_Exit",
};

/* the parameters and locals of generated functions: a top-level type of a
 * file without package named so would be hidden by them (`int d__dec(struct
 * rdmx_dec *d, d *m)` does not compile; `sizeof(ratio)` would silently be
 * the local's size) */
static const char *const c_local_names[] = {
    "a",       "arena",  "arg",      "b",   "bad",      "balancer", "buf",  "c",     "call",
    "call_id", "cb",     "cbs",      "cnt", "code",     "d",        "data", "dopts", "dst",
    "e",       "ep",     "handlers", "hdr", "headers",  "i",        "j",    "k",     "key",
    "len",     "m",      "message",  "msg", "n",        "o",        "opts", "out",   "p",
    "r",       "ratio",  "raw",      "rc",  "registry", "reply",    "req",  "res",   "resp",
    "s",       "server", "service",  "src", "st",       "status",   "tls",  "tmp",
};

static char *c_member(struct gen_ctx *ctx, const char *name);

/* the functions generated for every message X, X_<name>: a type nested in
 * X named so would be declared under the same C name */
static const char *const c_message_functions[] = {
    "init", "encoded_size", "encode", "decode", "payload", "_enc", "_dec", "_decp", "_encode_cb",
};

/* the C name of a type called name in cscope (the package's prefix, or the
 * C name of the message it is nested in, with a '_'; nested: the latter) */
static char *c_type(struct gen_ctx *ctx, const char *cscope, const char *name, bool nested)
{
	size_t i;
	for (i = 0; nested && i < sizeof(c_message_functions) / sizeof(c_message_functions[0]); i++)
		if (strcmp(c_message_functions[i], name) == 0)
			return gen_printf(&ctx->pool, "%s%s_", cscope, name);
	if (cscope[0])
		return gen_printf(&ctx->pool, "%s%s", cscope, name);
	for (i = 0; i < sizeof(c_type_names) / sizeof(c_type_names[0]); i++)
		if (strcmp(c_type_names[i], name) == 0)
			return gen_printf(&ctx->pool, "%s_", name);
	for (i = 0; i < sizeof(c_function_names) / sizeof(c_function_names[0]); i++)
		if (strcmp(c_function_names[i], name) == 0)
			return gen_printf(&ctx->pool, "%s_", name);
	for (i = 0; i < sizeof(c_local_names) / sizeof(c_local_names[0]); i++)
		if (strcmp(c_local_names[i], name) == 0)
			return gen_printf(&ctx->pool, "%s_", name);
	if (strncmp(name, "rdmx", 4) == 0 || strncmp(name, "RDMX", 4) == 0)
		return gen_printf(&ctx->pool, "%s_", name);
	return gen_strdup(&ctx->pool, c_member(ctx, name));
}

/* types generated structs name without `struct`/`enum`: in C++ a member
 * named so changes their meaning in the struct (an error) */
static const char *const c_member_types[] = {
    "size_t", "int32_t", "uint32_t", "int64_t", "uint64_t",
};

static char *c_member(struct gen_ctx *ctx, const char *name)
{
	size_t i;
	for (i = 0; i < sizeof(c_keywords) / sizeof(c_keywords[0]); i++)
		if (strcmp(c_keywords[i], name) == 0)
			return gen_printf(&ctx->pool, "%s_", name);
	for (i = 0; i < sizeof(c_member_types) / sizeof(c_member_types[0]); i++)
		if (strcmp(c_member_types[i], name) == 0)
			return gen_printf(&ctx->pool, "%s_", name);
	return (char *)name;
}

static char *c_prefix(struct gen_ctx *ctx, const char *package)
{
	char *s, *p;
	if (!package[0])
		return "";
	s = gen_printf(&ctx->pool, "%s_", package);
	for (p = s; *p; p++)
		if (*p == '.')
			*p = '_';
	return s;
}

/* ---- symbols ---- */

const char *gen_kind_name(int kind)
{
	switch (kind) {
	case SYM_PACKAGE:
		return "package";
	case SYM_MESSAGE:
		return "message";
	case SYM_ENUM:
		return "enum";
	case SYM_VALUE:
		return "enum value";
	case SYM_FIELD:
		return "field";
	case SYM_ONEOF:
		return "oneof";
	case SYM_SERVICE:
		return "service";
	default:
		return "method";
	}
}

const char *gen_scope_of(struct gen_ctx *ctx, const char *full)
{
	const char *dot = strrchr(full, '.');
	return dot ? gen_strndup(&ctx->pool, full, (size_t)(dot - full)) : "";
}

const char *gen_last_of(const char *full)
{
	const char *dot = strrchr(full, '.');
	return dot ? dot + 1 : full;
}

void gen_report_defined(struct gen_ctx *ctx, const struct gen_loc *loc, const char *full,
                        const struct sym *old, bool is_package, const struct gen_file *f)
{
	if (old->file != f && is_package && old->kind != SYM_PACKAGE)
		gen_error(ctx, &f->package_stmt_loc,
		          "\"%s\" is already defined (as something other than a package) in file "
		          "\"%s\".",
		          full, old->file->path);
	else if (old->file != f)
		gen_error(ctx, loc, "\"%s\" is already defined in file \"%s\".", full,
		          old->file->path);
	else if (is_package || old->kind == SYM_PACKAGE)
		gen_error(ctx, loc, "\"%s\" is already defined (as a %s).", full,
		          gen_kind_name(old->kind));
	else if (strchr(full, '.'))
		gen_error(ctx, loc, "\"%s\" is already defined in \"%s\".", gen_last_of(full),
		          gen_scope_of(ctx, full));
	else
		gen_error(ctx, loc, "\"%s\" is already defined.", full);
}

/* false when full is defined already (reported, but for a package again) */
static bool add_sym(struct gen_ctx *ctx, const char *full, int kind, void *ptr, struct gen_file *f,
                    const struct gen_loc *loc)
{
	struct resolver *r = gen_resolver(ctx);
	struct sym *old = gen_table_get(&r->syms, full), *s;
	if (!old) /* an extension of a file built before */
		old = gen_table_get(&r->exts, full);
	if (old) {
		if (kind != SYM_PACKAGE || old->kind != SYM_PACKAGE)
			gen_report_defined(ctx, loc, full, old, kind == SYM_PACKAGE, f);
		return false;
	}
	s = gen_alloc(&ctx->pool, sizeof(*s));
	s->name = full;
	s->kind = kind;
	s->ptr = ptr;
	s->file = f;
	if (loc)
		s->loc = *loc;
	gen_table_put(&ctx->pool, &r->syms, s);
	return true;
}

char *gen_qualify(struct gen_ctx *ctx, const char *scope, const char *name)
{
	return scope[0] ? gen_printf(&ctx->pool, "%s.%s", scope, name) : (char *)name;
}

/* ---- building a file in protoc 3.21's steps ----
 *
 * protoc's DescriptorBuilder builds a file in steps and reports what each
 * finds as it goes; rdmx-gen reports in the same order (the diagnostics are
 * printed as found): the package, the imports; then it builds every
 * element, adding its name (the later of two of one name is refused) and
 * checking its numbers; then it links every type name (and field and
 * extension numbers), then, when all that went well, reads the options and
 * validates what needs the whole file. Each step walks the file in protoc's
 * order for it, spelled out at each walk below. */

/* the state of one file's build */
struct build {
	struct gen_file *f;
	struct gen_vec owners; /* what options are set on, in the order protoc
	                          gathers them (AllocateOptions) */
};

static void owner(struct gen_ctx *ctx, struct build *b, const void *what)
{
	gen_vec_push(&ctx->pool, &b->owners, (void *)what);
}

/* values (each with its name), their names without the enum's prefix, the
 * enum's options, its name, then its reserved numbers and names (BuildEnum) */
static void build_enum(struct gen_ctx *ctx, struct build *b, struct gen_enum *e, const char *scope,
                       const char *cscope)
{
	int i;
	e->full_name = gen_qualify(ctx, scope, e->name);
	e->cname = c_type(ctx, cscope, e->name, strcmp(scope, b->f->package) != 0);
	gen_check_enum_parsed(ctx, e);
	/* C++ scoping: values are siblings of the enum */
	for (i = 0; i < e->values.n; i++) {
		struct gen_enum_value *v = e->values.items[i];
		v->cname = gen_printf(&ctx->pool, "%s_%s", e->cname, v->name);
		owner(ctx, b, v);
		if (!add_sym(ctx, gen_qualify(ctx, scope, v->name), SYM_VALUE, v, e->file,
		             &v->loc) &&
		    gen_enum_value_named(e, v->name) == v)
			/* protoc's second error when the name is new in e itself */
			gen_error(ctx, &v->loc,
			          "Note that enum values use C++ scoping rules, meaning that enum "
			          "values are siblings of their type, not children of it.  "
			          "Therefore, \"%s\" must be unique within %s%s%s, not just within "
			          "\"%s\".",
			          v->name, scope[0] ? "\"" : "",
			          scope[0] ? scope : "the global scope", scope[0] ? "\"" : "",
			          e->name);
	}
	gen_check_enum_value_names(ctx, e);
	owner(ctx, b, e);
	add_sym(ctx, e->full_name, SYM_ENUM, e, e->file, &e->loc);
	gen_check_enum_reserved(ctx, e);
}

/* the extensions of f declared in m (NULL: at the file's level) */
static void build_exts(struct gen_ctx *ctx, struct build *b, struct gen_message *m)
{
	int i;
	for (i = 0; i < b->f->exts.n; i++) {
		struct gen_ext *x = b->f->exts.items[i];
		if (x->parent != m)
			continue;
		if (x->field)
			owner(ctx, b, x->field);
		gen_build_ext(ctx, b->f, x);
	}
}

/* its oneofs, fields (numbers, then name), enums, extension ranges,
 * extensions, reserved ranges, nested messages, its options and name, then
 * the checks of its numbers against each other (BuildMessage) */
static void build_message(struct gen_ctx *ctx, struct build *b, struct gen_message *m,
                          const char *scope, const char *cscope)
{
	char *inner;
	int i;
	m->full_name = gen_qualify(ctx, scope, m->name);
	m->cname = c_type(ctx, cscope, m->name, strcmp(scope, b->f->package) != 0);
	inner = gen_printf(&ctx->pool, "%s_", m->cname);
	for (i = 0; i < m->oneofs.n; i++) {
		struct gen_oneof *o = m->oneofs.items[i];
		o->cname = o->name; /* used as <name>_case only */
		owner(ctx, b, o);
		add_sym(ctx, gen_qualify(ctx, m->full_name, o->name), SYM_ONEOF, o, m->file,
		        &o->loc);
	}
	for (i = 0; i < m->fields.n; i++) {
		struct gen_field *fd = m->fields.items[i];
		int k;
		fd->cname = c_member(ctx, fd->name);
		/* a renamed member (a keyword: int_) that another field of m is
		 * named as written (proto2 allows `int` and `int_`) gets one more
		 * '_' until none is: int__ */
		for (k = 0; fd->cname != fd->name && k < m->fields.n; k++) {
			const struct gen_field *o = m->fields.items[k];
			if (strcmp(o->name, fd->cname) == 0) {
				fd->cname = gen_printf(&ctx->pool, "%s_", fd->cname);
				k = -1;
			}
		}
		gen_check_field_number(ctx, fd, false);
		owner(ctx, b, fd);
		add_sym(ctx, gen_qualify(ctx, m->full_name, fd->name), SYM_FIELD, fd, m->file,
		        &fd->loc);
	}
	for (i = 0; i < m->enums.n; i++)
		build_enum(ctx, b, m->enums.items[i], m->full_name, inner);
	for (i = 0; i < m->ext_ranges.n && !m->map_entry; i++) {
		gen_check_ext_range(ctx, m->ext_ranges.items[i]);
		owner(ctx, b, m->ext_ranges.items[i]);
	}
	build_exts(ctx, b, m);
	/* protoc 3.21 takes an empty range (`5 to 1`) or one past the largest
	 * field number silently (BuildReservedRange) */
	for (i = 0; i < m->reserved.n && !m->map_entry; i++)
		if (((struct gen_range *)m->reserved.items[i])->lo <= 0)
			gen_error(ctx, &((struct gen_range *)m->reserved.items[i])->loc,
			          "Reserved numbers must be positive integers.");
	for (i = 0; i < m->messages.n; i++)
		build_message(ctx, b, m->messages.items[i], m->full_name, inner);
	owner(ctx, b, m);
	add_sym(ctx, m->full_name, SYM_MESSAGE, m, m->file, &m->loc);
	gen_check_message_numbers(ctx, m);
}

/* its methods, its options, its name (BuildService) */
static void build_service(struct gen_ctx *ctx, struct build *b, struct gen_service *s,
                          const char *cp)
{
	struct gen_file *f = b->f;
	int j;
	s->full_name = gen_qualify(ctx, f->package, s->name);
	s->cname = c_type(ctx, cp, s->name, false);
	for (j = 0; j < s->methods.n; j++) {
		struct gen_method *m = s->methods.items[j];
		m->cname = c_member(ctx, m->name);
		/* S_register, S_handlers and S_connect_service are the service's */
		m->cbase = gen_printf(&ctx->pool, "%s_%s%s", s->cname, m->name,
		                      strcmp(m->name, "register") == 0 ||
		                              strcmp(m->name, "handlers") == 0 ||
		                              strcmp(m->name, "connect_service") == 0
		                          ? "_"
		                          : "");
		owner(ctx, b, m);
		add_sym(ctx, gen_qualify(ctx, s->full_name, m->name), SYM_METHOD, m, f, &m->loc);
	}
	owner(ctx, b, s);
	add_sym(ctx, s->full_name, SYM_SERVICE, s, f, &s->loc);
}

/* every prefix of the package is a package symbol (AddPackage) */
static void build_package(struct gen_ctx *ctx, struct gen_file *f)
{
	char *pkg = gen_strdup(&ctx->pool, f->package), *dot;
	if (!pkg[0])
		return;
	for (dot = pkg; (dot = strchr(dot, '.')) != NULL; dot++) {
		*dot = 0;
		add_sym(ctx, gen_strdup(&ctx->pool, pkg), SYM_PACKAGE, NULL, f, &f->package_loc);
		*dot = '.';
	}
	add_sym(ctx, pkg, SYM_PACKAGE, NULL, f, &f->package_loc);
}

/* messages, enums, services, extensions, then the file's options */
static void build_elements(struct gen_ctx *ctx, struct build *b)
{
	struct gen_file *f = b->f;
	const char *cp = c_prefix(ctx, f->package);
	int i;
	for (i = 0; i < f->messages.n; i++)
		build_message(ctx, b, f->messages.items[i], f->package, cp);
	for (i = 0; i < f->enums.n; i++)
		build_enum(ctx, b, f->enums.items[i], f->package, cp);
	for (i = 0; i < f->services.n; i++)
		build_service(ctx, b, f->services.items[i], cp);
	build_exts(ctx, b, NULL);
	owner(ctx, b, f);
}

/* ---- name lookup (protoc's scoping rules) ---- */

/* def is f or reachable from f through `import public` only */
static bool reexports(const struct gen_file *f, const struct gen_file *def, int depth)
{
	int i;
	if (f == def)
		return true;
	if (depth > 64)
		return false;
	for (i = 0; i < f->imports.n; i++) {
		const struct gen_import *im = f->imports.items[i];
		if (im->is_public && im->file && reexports(im->file, def, depth + 1))
			return true;
	}
	return false;
}

bool gen_visible(const struct gen_file *from, const struct gen_file *def)
{
	int i;
	if (from == def)
		return true;
	for (i = 0; i < from->imports.n; i++) {
		const struct gen_import *im = from->imports.items[i];
		if (im->file && reexports(im->file, def, 0))
			return true;
	}
	return false;
}

/* name is the package pkg or inside it */
static bool in_package(const char *pkg, const char *name)
{
	size_t n = strlen(name);
	return strncmp(pkg, name, n) == 0 && (pkg[n] == 0 || pkg[n] == '.');
}

/* f, or a file it re-exports with `import public`, is in package name */
static bool package_reexported(const struct gen_file *f, const char *name, int depth)
{
	int i;
	if (in_package(f->package, name))
		return true;
	if (depth > 64)
		return false;
	for (i = 0; i < f->imports.n; i++) {
		const struct gen_import *im = f->imports.items[i];
		if (im->is_public && im->file && package_reexported(im->file, name, depth + 1))
			return true;
	}
	return false;
}

/* protoc's FindSymbol: a package when from or a file it imports (or one
 * such a file re-exports) is in it, anything else when gen_visible */
bool gen_sym_visible(const struct gen_file *from, const struct sym *s)
{
	int i;
	if (gen_visible(from, s->file))
		return true;
	if (s->kind != SYM_PACKAGE)
		return false;
	if (in_package(from->package, s->name))
		return true;
	for (i = 0; i < from->imports.n; i++) {
		const struct gen_import *im = from->imports.items[i];
		if (im->file && package_reexported(im->file, s->name, 0))
			return true;
	}
	return false;
}

static void mark_used(struct gen_ctx *ctx, struct gen_file *f, struct gen_file *def)
{
	int i;
	if (f == def)
		return;
	for (i = 0; i < f->used.n; i++)
		if (f->used.items[i] == def)
			return;
	gen_vec_push(&ctx->pool, &f->used, def);
}

bool gen_import_needed(const struct gen_file *f, const struct gen_import *im)
{
	int i;
	if (!im->file)
		return false;
	if (im->is_public) {
		/* a re-exported file is included when it has types */
		return im->file->messages.n || im->file->enums.n;
	}
	for (i = 0; i < f->used.n; i++)
		if (reexports(im->file, f->used.items[i], 0))
			return true;
	return false;
}

/* name in the tables flags asks for: the symbols, then the extensions */
static struct sym *lookup_get(struct resolver *r, const char *name, unsigned flags)
{
	struct sym *s = gen_table_get(&r->syms, name);
	if (!s && (flags & GEN_LOOKUP_EXTS))
		s = gen_table_get(&r->exts, name);
	return s;
}

static bool is_aggregate(const struct sym *s)
{
	return s->kind == SYM_PACKAGE || s->kind == SYM_MESSAGE || s->kind == SYM_ENUM ||
	       s->kind == SYM_SERVICE;
}

/* protoc's scoping rules (DescriptorBuilder::LookupSymbol): the scopes are
 * tried from the innermost out, each with the first part of name. A symbol
 * from cannot see (gen_sym_visible) is passed over, as protoc's FindSymbol
 * does. For a dotted name the first aggregate found (package, message, enum,
 * service) decides and the rest must be inside it (else *undefined names
 * what it stood for); a simple name's first symbol wins, but with
 * GEN_LOOKUP_TYPES (field types) one that is not a type (a package too) is
 * passed over. At the root the whole name is taken, whatever it is. When
 * nothing visible stands for name, the first symbol passed over for not
 * being visible, so that the caller can say which import is missing. */
struct sym *gen_lookup(struct gen_ctx *ctx, const struct gen_file *from, const char *scope,
                       const char *name, unsigned flags, const char **undefined)
{
	struct resolver *r = gen_resolver(ctx);
	struct sym *hidden = NULL, *s;
	const char *dot;
	char *first, *sc;
	if (undefined)
		*undefined = NULL;
	if (name[0] == '.')
		return lookup_get(r, name + 1, flags);
	dot = strchr(name, '.');
	first = dot ? gen_strndup(&ctx->pool, name, (size_t)(dot - name)) : (char *)name;
	sc = gen_strdup(&ctx->pool, scope);
	while (sc[0]) {
		char *d;
		s = lookup_get(r, gen_qualify(ctx, sc, first), flags);
		if (s && !gen_sym_visible(from, s)) {
			hidden = hidden ? hidden : s;
			s = NULL;
		}
		if (s && dot && is_aggregate(s)) {
			char *full = gen_qualify(ctx, sc, name);
			s = lookup_get(r, full, flags);
			if (undefined && (!s || !gen_sym_visible(from, s)))
				*undefined = full;
			return s;
		}
		if (s && !dot &&
		    (!(flags & GEN_LOOKUP_TYPES) || s->kind == SYM_MESSAGE || s->kind == SYM_ENUM))
			return s;
		d = strrchr(sc, '.');
		if (d)
			*d = 0;
		else
			sc[0] = 0;
	}
	s = lookup_get(r, name, flags);
	return s && (gen_sym_visible(from, s) || !hidden) ? s : hidden;
}

/* a message of protobuf's descriptor.proto that rdmx's own copy leaves out
 * (it has the option messages only): full is "google.protobuf.<name>" */
static bool descriptor_full_name(const char *full)
{
	static const char *const names[] = {
	    "FileDescriptorSet",
	    "FileDescriptorProto",
	    "DescriptorProto",
	    "FieldDescriptorProto",
	    "OneofDescriptorProto",
	    "EnumDescriptorProto",
	    "EnumValueDescriptorProto",
	    "ServiceDescriptorProto",
	    "MethodDescriptorProto",
	    "UninterpretedOption",
	    "SourceCodeInfo",
	    "GeneratedCodeInfo",
	    "FeatureSet",
	    "FeatureSetDefaults",
	};
	size_t i, n;
	if (strncmp(full, "google.protobuf.", 16) != 0)
		return false;
	full += 16;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		n = strlen(names[i]);
		if (strncmp(full, names[i], n) == 0 && (full[n] == 0 || full[n] == '.'))
			return true;
	}
	return false;
}

/* name (as written in scope) names one of those, by protoc's scoping rules
 * (compiler/plugin.proto writes FileDescriptorProto from inside
 * google.protobuf) */
bool gen_descriptor_message(struct gen_ctx *ctx, const char *scope, const char *name)
{
	char *sc;
	if (name[0] == '.')
		return descriptor_full_name(name + 1);
	sc = gen_strdup(&ctx->pool, scope);
	for (;;) {
		char *d;
		if (descriptor_full_name(gen_qualify(ctx, sc, name)))
			return true;
		if (!sc[0])
			return false;
		d = strrchr(sc, '.');
		if (d)
			*d = 0;
		else
			sc[0] = 0;
	}
}

void gen_descriptor_error(struct gen_ctx *ctx, const struct gen_loc *loc, const char *name)
{
	gen_error(ctx, loc,
	          "\"%s\" is not supported: rdmx-gen's google/protobuf/descriptor.proto has only "
	          "the option messages (*Options), not the descriptors; carry a serialized "
	          "descriptor as bytes",
	          name);
}

/* protoc's words (AddNotDefinedError) for a name gen_lookup found nothing
 * visible for: s, what it passed over for not being visible (or NULL);
 * undefined, what the name's first part made it stand for (or NULL) */
void gen_not_defined(struct gen_ctx *ctx, const struct gen_loc *loc, const char *name,
                     const struct sym *s, const char *undefined, const struct gen_file *from)
{
	if (s)
		gen_error(ctx, loc,
		          "\"%s\" seems to be defined in \"%s\", which is not imported by "
		          "\"%s\".  To use it here, please add the necessary import.",
		          s->name, s->file->path, from->path);
	else if (undefined)
		gen_error(ctx, loc,
		          "\"%s\" is resolved to \"%s\", which is not defined. The innermost "
		          "scope is searched first in name resolution. Consider using a leading "
		          "'.'(i.e., \".%s\") to start from the outermost scope.",
		          name, undefined, name);
	else
		gen_error(ctx, loc, "\"%s\" is not defined.", name);
}

/* a field's type (rpc false) or an rpc's request or response type, looked up
 * as protoc does: a field's among types only, from the message; an rpc's
 * among all symbols, from the service (a method of that name hides a
 * message) */
static bool resolve_type(struct gen_ctx *ctx, struct gen_file *f, const char *scope,
                         const char *name, bool rpc, const struct gen_loc *loc, enum gen_type *type,
                         struct gen_message **msg, struct gen_enum **en)
{
	const char *undefined;
	struct sym *s = gen_lookup(ctx, f, scope, name, rpc ? 0 : GEN_LOOKUP_TYPES, &undefined);
	if (!s && gen_descriptor_message(ctx, scope, name)) {
		gen_descriptor_error(ctx, loc, name);
		return false;
	}
	if (!s || !gen_visible(f, s->file)) {
		gen_not_defined(ctx, loc, name, s, undefined, f);
		return false;
	}
	if (rpc && s->kind != SYM_MESSAGE) {
		gen_error(ctx, loc, "\"%s\" is not a message type.", name);
		return false;
	}
	if (s->kind != SYM_MESSAGE && s->kind != SYM_ENUM) {
		gen_error(ctx, loc, "\"%s\" is not a type.", name);
		return false;
	}
	mark_used(ctx, f, s->file);
	if (s->kind == SYM_MESSAGE) {
		*type = GT_MESSAGE;
		*msg = s->ptr;
	} else {
		*type = GT_ENUM;
		*en = s->ptr;
	}
	return true;
}

/* fd's number not taken by a field of m before it, as protoc's
 * AddFieldByNumber finds one: the first seq fields of m numbered 1 to seq
 * in order are always there (protoc's sequential_field_limit_), the other
 * fields once linked (linked) */
static void link_field_number(struct gen_ctx *ctx, const struct gen_message *m, int seq, int i,
                              const bool *linked)
{
	const struct gen_field *fd = m->fields.items[i], *o = NULL;
	int j;
	if (fd->number >= 1 && fd->number <= seq) {
		if (fd->number - 1 != i)
			o = m->fields.items[fd->number - 1];
	} else {
		for (j = seq; j < i && !o; j++) {
			const struct gen_field *e = m->fields.items[j];
			if (linked[j] && e->number == fd->number)
				o = e;
		}
	}
	if (o)
		gen_error(ctx, &fd->number_loc,
		          "Field number %lld has already been used in \"%s\" by field \"%s\".",
		          (long long)fd->number, m->full_name, o->name);
}

/* a field's type; false when it is not linked (an error, or deferred) */
static bool link_field(struct gen_ctx *ctx, struct gen_message *m, struct gen_field *fd)
{
	if (fd->type != GT_NAMED)
		return true;
	if (!m->file->input && gen_descriptor_message(ctx, m->full_name, fd->type_name) &&
	    !gen_lookup(ctx, m->file, m->full_name, fd->type_name, GEN_LOOKUP_TYPES, NULL)) {
		/* an option-definition import may describe descriptors (a
		 * validation library's violation paths do): fine while nothing
		 * generates that file */
		struct deferred *d = gen_alloc(&ctx->pool, sizeof(*d));
		d->fd = fd;
		d->f = m->file;
		gen_vec_push(&ctx->pool, &gen_resolver(ctx)->deferred, d);
		return true;
	}
	return resolve_type(ctx, m->file, m->full_name, fd->type_name, false, &fd->type_loc,
	                    &fd->type, &fd->msg, &fd->en);
}

static void link_exts(struct gen_ctx *ctx, struct gen_file *f, const struct gen_message *m)
{
	int i;
	for (i = 0; i < f->exts.n; i++) {
		struct gen_ext *x = f->exts.items[i];
		if (x->parent == m)
			gen_link_ext(ctx, f, x);
	}
}

/* its nested messages, its fields (type, then number), its extensions, then
 * its oneofs (CrossLinkMessage) */
static void link_message(struct gen_ctx *ctx, struct gen_message *m)
{
	bool *linked = gen_alloc(&ctx->pool, sizeof(bool) * (size_t)(m->fields.n + 1));
	int i, seq = 0;
	for (i = 0; i < m->messages.n; i++)
		link_message(ctx, m->messages.items[i]);
	while (seq < m->fields.n && seq < 65535 &&
	       ((struct gen_field *)m->fields.items[seq])->number == seq + 1)
		seq++;
	for (i = 0; i < m->fields.n; i++) {
		if (!link_field(ctx, m, m->fields.items[i]))
			continue;
		link_field_number(ctx, m, seq, i, linked);
		linked[i] = true;
	}
	link_exts(ctx, m->file, m);
	gen_check_oneofs(ctx, m);
}

/* its methods' request and response types (CrossLinkMethod) */
static void link_service(struct gen_ctx *ctx, struct gen_file *f, struct gen_service *s)
{
	int j, k;
	for (j = 0; j < s->methods.n; j++) {
		struct gen_method *m = s->methods.items[j];
		enum gen_type t = GT_NONE;
		struct gen_enum *en = NULL;
		char *full = gen_printf(&ctx->pool, "%s/%s", s->full_name, m->name);
		if (resolve_type(ctx, f, s->full_name, m->in_name, true, &m->in_loc, &t, &m->in,
		                 &en) &&
		    t != GT_MESSAGE)
			gen_error(ctx, &m->in_loc, "\"%s\" is not a message type.", m->in_name);
		t = GT_NONE;
		if (resolve_type(ctx, f, s->full_name, m->out_name, true, &m->out_loc, &t, &m->out,
		                 &en) &&
		    t != GT_MESSAGE)
			gen_error(ctx, &m->out_loc, "\"%s\" is not a message type.", m->out_name);
		m->id = gen_fnv1a(full);
		for (k = 0; k < j; k++) {
			struct gen_method *o = s->methods.items[k];
			if (o->id == m->id && strcmp(o->name, m->name) != 0)
				gen_error(ctx, &m->loc,
				          "method id 0x%08x of \"%s\" collides with \"%s\"", m->id,
				          m->name, o->name);
		}
	}
}

/* messages, extensions, services (CrossLinkFile; enums link nothing) */
static void link_elements(struct gen_ctx *ctx, struct gen_file *f)
{
	int i;
	for (i = 0; i < f->messages.n; i++)
		link_message(ctx, f->messages.items[i]);
	link_exts(ctx, f, NULL);
	for (i = 0; i < f->services.n; i++)
		link_service(ctx, f, f->services.items[i]);
}

/* the options of each place in the order protoc gathered them, each place's
 * in source order (protoc stops reading a place at its first wrong option;
 * rdmx-gen reports them all) */
static void read_options(struct gen_ctx *ctx, struct build *b)
{
	struct gen_file *f = b->f;
	int i, j;
	for (i = 0; i < b->owners.n; i++) {
		for (j = 0; j < f->optrefs.n; j++) {
			struct gen_optref *o = f->optrefs.items[j];
			if (o->owner != b->owners.items[i])
				continue;
			gen_check_optref(ctx, f, o);
			gen_check_option_twice(ctx, f, o);
		}
	}
}

static void validate_enum_options(struct gen_ctx *ctx, const struct gen_enum *e)
{
	gen_check_enum_aliases(ctx, e);
}

/* the extensions of f declared in m (NULL: at the file's level) */
static void validate_ext_options(struct gen_ctx *ctx, const struct gen_file *f,
                                 const struct gen_message *m)
{
	int i;
	for (i = 0; i < f->exts.n; i++) {
		const struct gen_ext *x = f->exts.items[i];
		if (x->parent == m && x->field) {
			struct sym *s = x->extendee_full ? gen_table_get(&gen_resolver(ctx)->syms,
			                                                 x->extendee_full)
			                                 : NULL;
			gen_check_field_options(ctx, x->field,
			                        s && s->kind == SYM_MESSAGE ? s->ptr : NULL, true);
		}
	}
}

/* its fields, nested messages, enums, extensions, extension ranges
 * (ValidateMessageOptions) */
static void validate_message_options(struct gen_ctx *ctx, const struct gen_message *m)
{
	int i;
	for (i = 0; i < m->fields.n; i++)
		gen_check_field_options(ctx, m->fields.items[i], m, false);
	for (i = 0; i < m->messages.n; i++)
		validate_message_options(ctx, m->messages.items[i]);
	for (i = 0; i < m->enums.n; i++)
		validate_enum_options(ctx, m->enums.items[i]);
	validate_ext_options(ctx, m->file, m);
	gen_check_ext_ranges_max(ctx, m);
}

/* nested messages, enums, fields, extensions, then m itself
 * (ValidateProto3Message) */
static void validate_proto3_message(struct gen_ctx *ctx, const struct gen_message *m)
{
	int i;
	for (i = 0; i < m->messages.n; i++)
		validate_proto3_message(ctx, m->messages.items[i]);
	for (i = 0; i < m->enums.n; i++)
		gen_check_enum_zero(ctx, m->enums.items[i]);
	for (i = 0; i < m->fields.n; i++)
		gen_check_proto3_enum_field(ctx, m->fields.items[i], m->full_name);
	gen_check_proto3_exts(ctx, m->file, m);
	gen_check_proto3_message(ctx, m);
}

/* messages, enums, services, extensions, lite imports; then, in proto3,
 * messages and enums again (ValidateFileOptions, ValidateProto3) */
static void validate(struct gen_ctx *ctx, struct gen_file *f)
{
	int i;
	for (i = 0; i < f->messages.n; i++)
		validate_message_options(ctx, f->messages.items[i]);
	for (i = 0; i < f->enums.n; i++)
		validate_enum_options(ctx, f->enums.items[i]);
	for (i = 0; i < f->services.n; i++) {
		const struct gen_service *sv = f->services.items[i];
		if (f->lite && f->generic_services)
			gen_error(ctx, &sv->loc,
			          "Files with optimize_for = LITE_RUNTIME cannot define services "
			          "unless you set both options cc_generic_services and "
			          "java_generic_services to false.");
	}
	validate_ext_options(ctx, f, NULL);
	/* a lite file is imported by lite files only (the first one named) */
	for (i = 0; i < f->imports.n && !f->lite; i++) {
		const struct gen_import *im = f->imports.items[i];
		if (im->file && im->file->lite) {
			gen_error(ctx, &im->stmt_loc,
			          "Files that do not use optimize_for = LITE_RUNTIME cannot import "
			          "files which do use this option.  This file is not lite, but it "
			          "imports \"%s\" which is.",
			          im->name);
			break;
		}
	}
	if (f->proto2)
		return;
	gen_check_proto3_exts(ctx, f, NULL);
	for (i = 0; i < f->messages.n; i++)
		validate_proto3_message(ctx, f->messages.items[i]);
	for (i = 0; i < f->enums.n; i++)
		gen_check_enum_zero(ctx, f->enums.items[i]);
}

/* the members of the generated structs (rdmx-gen's own, after protoc's) */
static void check_members(struct gen_ctx *ctx, struct gen_message *m)
{
	int i;
	gen_check_members(ctx, m);
	for (i = 0; i < m->messages.n; i++)
		check_members(ctx, m->messages.items[i]);
}

/* f, after the files it imports (done: the files built), in protoc's steps
 * (above); then, when all that went well, its defaults. A name defined in
 * two files is so refused in the one built later, the importing one. A
 * file with errors is dropped as protoc drops it: its symbols and
 * extensions are taken out again and a file importing it reports the
 * import and is built without it (its names are not defined there). */
static void build_with_imports(struct gen_ctx *ctx, struct gen_file *f, struct gen_vec *done)
{
	struct resolver *r = gen_resolver(ctx);
	struct build b = {f, {0}};
	unsigned clock;
	int i, errors;
	for (i = 0; i < done->n; i++)
		if (done->items[i] == f)
			return;
	gen_vec_push(&ctx->pool, done, f);
	if (!f->parsed)
		return; /* failed already, nothing to build */
	for (i = 0; i < f->imports.n; i++) {
		const struct gen_import *im = f->imports.items[i];
		if (im->file)
			build_with_imports(ctx, im->file, done);
	}
	errors = ctx->errors;
	clock = ctx->clock;
	ctx->clock = f->build_key;
	build_package(ctx, f);
	for (i = 0; i < f->imports.n; i++) {
		struct gen_import *im = f->imports.items[i];
		if (im->twice)
			gen_error(ctx, &im->stmt_loc, "Import \"%s\" was listed twice.", im->name);
		if (im->failed || (im->file && im->file->failed)) {
			gen_error(ctx, &im->stmt_loc, "Import \"%s\" was not found or had errors.",
			          im->name);
			im->file = NULL;
		}
	}
	build_elements(ctx, &b);
	link_elements(ctx, f);
	/* options name fields of f's messages and of those it imports; protoc
	 * reads them, then validates, only when all that went well (its
	 * imports too) */
	if (ctx->errors == errors && !f->failed)
		read_options(ctx, &b);
	if (ctx->errors == errors && !f->failed)
		validate(ctx, f);
	for (i = 0; i < f->messages.n; i++)
		check_members(ctx, f->messages.items[i]);
	/* defaults need the types resolved */
	for (i = 0; i < f->messages.n && ctx->errors == errors && !f->failed; i++)
		gen_resolve_defaults(ctx, f->messages.items[i]);
	if (ctx->errors == errors && !f->failed)
		gen_resolve_ext_defaults(ctx, f);
	if (ctx->errors != errors || f->failed) {
		f->failed = true;
		table_drop_file(&ctx->pool, &r->syms, f);
		table_drop_file(&ctx->pool, &r->exts, f);
		table_drop_file(&ctx->pool, &r->ext_numbers, f);
	}
	ctx->clock = clock;
}

bool gen_resolve(struct gen_ctx *ctx)
{
	struct gen_vec done = {0};
	int i, errors = ctx->errors;
	for (i = 0; i < ctx->files.n; i++) {
		struct gen_file *f = ctx->files.items[i];
		if (f->input && !f->parsed)
			return false;
	}
	for (i = 0; i < ctx->files.n; i++)
		build_with_imports(ctx, ctx->files.items[i], &done);
	for (i = 0; i < ctx->files.n; i++)
		if (((struct gen_file *)ctx->files.items[i])->failed)
			return false;
	if (ctx->errors != errors)
		return false;
	for (i = 0; i < ctx->files.n; i++) {
		struct gen_file *f = ctx->files.items[i];
		if (f->input)
			gen_check_c_names(ctx, f);
	}
	return ctx->errors == errors;
}
