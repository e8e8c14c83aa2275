/* rdmx-gen internals: the parsed schema (AST), diagnostics, memory pool.
 * lexer.c -> parser.c -> resolve.c (imports, types, checks; with resolve_load.c,
 * resolve_checks.c, resolve_options.c and resolve_defaults.c) -> emit_h.c/emit_c.c. */
#ifndef RDMX_GEN_H
#define RDMX_GEN_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- memory: everything of one run lives in one pool ---- */

struct gen_pool {
	struct gen_pool_block *blocks;
};

void *gen_alloc(struct gen_pool *pool, size_t size); /* zeroed; aborts when out of memory */
char *gen_strdup(struct gen_pool *pool, const char *s);
char *gen_strndup(struct gen_pool *pool, const char *s, size_t n);
char *gen_printf(struct gen_pool *pool, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gen_pool_free(struct gen_pool *pool);

/* A growable array of pointers, allocated from a pool. */
struct gen_vec {
	void **items;
	int n, cap;
};
void gen_vec_push(struct gen_pool *pool, struct gen_vec *v, void *item);

/* A growable text buffer (heap). */
struct gen_buf {
	char *data;
	size_t len, cap;
};
void gen_buf_printf(struct gen_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gen_buf_puts(struct gen_buf *b, const char *s);
/* Appends what fp holds up to its end (any bytes; a NUL follows them, so
 * data is set even for none); false on a read error (errno says which),
 * with what was read before it appended. */
bool gen_buf_read(struct gen_buf *b, FILE *fp);
/* Appends s[0..len) in double quotes: control and non-ASCII bytes as three
 * octal digits, the characters of escaped after a backslash ("\"\\" for
 * protoc's messages and .proto text, plus '?' for a C literal: no trigraph). */
void gen_buf_quote(struct gen_buf *b, const char *s, size_t len, const char *escaped);
void gen_buf_free(struct gen_buf *b);

/* ---- schema ---- */

struct gen_loc {
	const char *file; /* as shown in diagnostics */
	int line, col;
};

enum gen_type {
	GT_NONE = 0,
	GT_DOUBLE,
	GT_FLOAT,
	GT_INT32,
	GT_INT64,
	GT_UINT32,
	GT_UINT64,
	GT_SINT32,
	GT_SINT64,
	GT_FIXED32,
	GT_FIXED64,
	GT_SFIXED32,
	GT_SFIXED64,
	GT_BOOL,
	GT_STRING,
	GT_BYTES,
	GT_NAMED,   /* not resolved yet: type_name */
	GT_MESSAGE, /* resolved: msg */
	GT_ENUM,    /* resolved: en */
};

enum gen_label { GL_NONE, GL_OPTIONAL, GL_REPEATED };

struct gen_message;
struct gen_enum;
struct gen_file;

/* [default = ...] of a proto2 field, as written (rdmx-gen's parser) or as
 * protoc sends it (protoc-gen-rdmx). The resolver checks it against the
 * field's type and sets the value, which is what the emitters use, so both
 * front ends generate the same code; it also gives a proto2 enum field
 * without one its first value, as protobuf does. */
struct gen_default {
	char *text;  /* a number (sign included), an identifier, or a string's bytes */
	size_t len;  /* string and bytes: the number of bytes in text */
	bool string; /* text holds the bytes of a string literal */
	struct gen_loc loc;
	struct gen_loc num_loc; /* the number's, after a sign (protoc's place for its
	                           errors); loc when there is no sign */
	/* set by the resolver, by the field's type */
	int64_t i;                       /* signed integers, bool (0/1) */
	uint64_t u;                      /* unsigned integers */
	double d;                        /* float (rounded to float), double */
	const struct gen_enum_value *ev; /* enum */
	bool zero;                       /* the value is the zero default */
};

struct gen_field {
	char *name;
	char *cname; /* C member name (keywords get a trailing '_') */
	int64_t number;
	enum gen_label label;
	enum gen_type type;
	char *type_name; /* GT_NAMED: as written */
	struct gen_message *msg;
	struct gen_enum *en;
	int oneof;       /* index into the message's oneofs, -1 for none */
	bool is_map;     /* repeated field of a map entry message (msg) */
	bool required;   /* proto2 `required`: always written, checked by the decoder */
	bool deprecated; /* [deprecated = true]: a comment in the generated struct */
	bool jstype;     /* [jstype = JS_STRING] or JS_NUMBER (64-bit integers only) */
	bool packed;     /* [packed = true]: no effect (checked as protoc checks it) */
	bool lazy;       /* [lazy = true] or [unverified_lazy = true]: no effect (checked) */
	bool group;      /* a proto2 group's field (type GT_MESSAGE once resolved) */
	char *json_name; /* [json_name = "..."], NULL when not given */
	struct gen_loc json_name_loc; /* its option's name */
	struct gen_default *def;      /* proto2 [default = ...], NULL when none */
	struct gen_loc loc, type_loc, number_loc;
};

/* the largest field number (2^29 - 1) */
#define GEN_FIELD_MAX 536870911

struct gen_range {
	int64_t lo, hi; /* inclusive */
	bool to_max;    /* an extension range `N to max`: hi set at the message's end */
	struct gen_loc loc;
};

struct gen_name {
	char *name;
	struct gen_loc loc;
};

struct gen_oneof {
	char *name;
	char *cname;
	struct gen_loc loc;
	int nfields;
};

struct gen_message {
	char *name;
	char *full_name; /* package.Outer.Inner */
	char *cname;     /* package_Outer_Inner */
	struct gen_loc loc;
	struct gen_message *parent;
	struct gen_file *file;
	struct gen_vec fields;   /* struct gen_field * */
	struct gen_vec messages; /* nested (map entries included) */
	struct gen_vec enums;
	struct gen_vec oneofs;     /* struct gen_oneof * */
	struct gen_vec reserved;   /* struct gen_range * */
	struct gen_vec rnames;     /* struct gen_name * */
	struct gen_vec ext_ranges; /* struct gen_range *: `extensions` (proto2) */
	bool map_entry;
	bool message_set; /* option message_set_wire_format = true: extensions may
	                     go up to 2^31 - 2 */
	bool deprecated;
	unsigned mark; /* scratch for graph walks (emit_c.c) */
};

struct gen_enum_value {
	char *name;
	char *cname;
	int64_t number;
	bool deprecated;
	struct gen_loc loc, number_loc;
};

struct gen_enum {
	char *name, *full_name, *cname;
	struct gen_loc loc;
	struct gen_message *parent;
	struct gen_file *file;
	struct gen_vec values; /* struct gen_enum_value * */
	struct gen_vec reserved;
	struct gen_vec rnames;
	bool allow_alias;         /* option allow_alias = true */
	bool alias_false;         /* option allow_alias = false, as written (first set) */
	struct gen_loc alias_loc; /* where allow_alias is first set (line 0: nowhere) */
	bool deprecated;
};

struct gen_method {
	char *name;
	char *cname; /* handler member name */
	char *cbase; /* the prefix of its C names: service_method */
	struct gen_loc loc;
	char *in_name, *out_name;
	struct gen_loc in_loc, out_loc;
	struct gen_message *in, *out;
	uint32_t id;
	bool client_streaming, server_streaming; /* `stream` before the request / response */
	bool deprecated;
	bool idempotent; /* option idempotency_level = IDEMPOTENT or NO_SIDE_EFFECTS */
};

/* a unary method (the others: emit_stream.c) */
#define GEN_UNARY(m) (!(m)->client_streaming && !(m)->server_streaming)

struct gen_service {
	char *name, *full_name, *cname;
	struct gen_loc loc;
	struct gen_vec methods;
	bool deprecated;
};

struct gen_import {
	char *name; /* as written */
	struct gen_loc loc;
	struct gen_loc stmt_loc; /* of the `import` keyword, where protoc reports it */
	struct gen_file *file;   /* NULL when not found or dropped (had errors) */
	bool is_public, is_weak;
	bool twice;  /* listed before in the same file */
	bool failed; /* not found, or a file of an import cycle (not f itself) */
};

/* a field of an `extend X { ... }` block: kept to resolve custom option names,
 * never generated (proto3 extends only the *Options messages; a proto2
 * extension of a data message gets a warning when its file is generated) */
struct gen_ext {
	char *name;
	char *full_name;            /* set by the resolver */
	char *extendee;             /* as written */
	char *extendee_full;        /* set by the resolver: the extended message */
	struct gen_field *field;    /* its type and label, resolved by the resolver (its
	                               message type is where `(ext).x` looks for x); NULL
	                               from protoc-gen-rdmx, where protoc checked the options */
	struct gen_message *parent; /* scope: NULL at file level */
	struct gen_file *file;
	struct gen_loc loc, extendee_loc;
};

struct gen_tok;

/* one part of an option name: `name`, or `(ext.name)` */
struct gen_optpart {
	char *name; /* the identifier, or what is inside the parentheses */
	bool ext;   /* (name): an extension */
	struct gen_loc loc;
	const struct gen_field *field; /* set by the resolver: the field or extension */
};

/* what an option's value is, as written */
enum gen_value_kind {
	GV_IDENT = 1, /* true, SPEED */
	GV_STRING,    /* "..." (concatenated) */
	GV_INT,       /* 5, -5, 0x10 */
	GV_FLOAT,     /* 1.5, -1e3, and in a default -inf, +nan */
	GV_AGGREGATE  /* { ... } */
};

/* the name of an option set somewhere. One with a custom option in it or
 * more than one part (`(a.b)`, `(a).b.(c)`, `deprecated.x`) is checked
 * part by part as protoc does: each part a field or extension of the
 * message the part before it is of. Every one is checked against the
 * options set before it on the same place (set twice). */
struct gen_optref {
	struct gen_optpart *parts;
	int nparts;
	struct gen_message *scope; /* where (x) is looked up from (protoc's: the scope
	                              around what the option is set on), NULL: the package */
	const char *options;       /* the *Options message of the place the option is set:
	                              "google.protobuf.FieldOptions", ... */
	const void *owner;         /* what it is set on: the gen_* object (the file, an
	                              extension statement's first range) */
	bool check_name;           /* its parts are checked (else a plain name alone) */
	enum gen_value_kind value_kind;
	const char *value;   /* GV_IDENT, GV_STRING: its text; GV_INT, GV_FLOAT: as
	                        written, with its '-' (not a signed inf or nan) */
	uint64_t value_int;  /* GV_INT: its magnitude */
	bool value_negative; /* GV_INT, GV_FLOAT: written with '-' */
	struct gen_loc value_loc;
	struct gen_vec keys;                 /* char *: the fields a GV_AGGREGATE value sets, as
	                                        paths (`a`, `b.c`, `[x.y].c`), but inside lists */
	const struct gen_tok *agg, *agg_end; /* GV_AGGREGATE: its tokens, from its '{' up
	                                        to its closing token (agg_end) */
	bool resolved;                       /* set by the resolver: every part is known */
	bool repeated;                       /* set by the resolver: its last part is repeated */
};

struct gen_file {
	char *path;     /* for diagnostics: as given or folder + import name */
	char *dir;      /* folder of path, for sibling imports */
	char *real;     /* canonical path (identity) */
	char *basename; /* file name without folder and extension */
	char *name;     /* protoc's name: relative to its proto path (a/b/c.proto) */
	char *package;  /* "" when none */
	bool proto2;    /* syntax = "proto2" (or none): parsed leniently */
	bool builtin;   /* one of the well-known types embedded in rdmx-gen */
	bool lite;      /* option optimize_for = LITE_RUNTIME (checked as protoc checks it) */
	bool generic_services; /* option cc_ or java_generic_services = true */
	struct gen_loc syntax_loc;
	/* of the `package` keyword, where protoc reports a package's clash */
	struct gen_loc package_stmt_loc;
	struct gen_vec exts;    /* struct gen_ext * */
	struct gen_vec optrefs; /* struct gen_optref * */
	struct gen_vec used;    /* struct gen_file *: files whose types this one uses */
	struct gen_loc package_loc;
	struct gen_vec imports;  /* struct gen_import * */
	struct gen_vec messages; /* top level */
	struct gen_vec enums;
	struct gen_vec services;
	int state;          /* 0 new, 1 loading (cycle check), 2 loaded */
	bool parsed;        /* no syntax errors */
	bool failed;        /* had errors (loading it or its imports, or resolving it) */
	bool input;         /* named on the command line */
	unsigned build_key; /* ctx->clock of its build: after its imports' */
	const char *text;   /* the source (pool or ctx->mem_text), embedded for reflection */
	size_t text_len;
};

/* ---- one run ---- */

struct gen_ctx {
	struct gen_pool pool;
	FILE *diag; /* NULL: count errors silently (fuzzing) */
	int errors;
	int max_errors;
	struct gen_vec include_dirs; /* char *: the proto paths, in order */
	struct gen_vec files;        /* every file loaded, struct gen_file * */
	void *priv;                  /* resolver state */
	unsigned stamp;              /* for gen_message.mark */
	struct gen_vec diags;        /* buffered diagnostics, flushed in protoc's order */
	unsigned clock;              /* the step of protoc's walk diagnostics belong to */
	/* in-memory sources (fuzzing, tests): path -> text */
	const char *mem_path;
	const char *mem_text;
	size_t mem_len;
};

void gen_ctx_init(struct gen_ctx *ctx, FILE *diag);
/* Prints the buffered diagnostics in protoc's order: protoc parses a
 * file, then loads (parses and builds) each of its imports, then builds
 * it; rdmx-gen loads every file first and builds them after, so a
 * diagnostic is tagged with the step of that walk it belongs to
 * (ctx->clock when reported) and printed by step, then as reported.
 * gen_ctx_fini flushes too. */
void gen_flush(struct gen_ctx *ctx);
void gen_ctx_fini(struct gen_ctx *ctx);
void gen_error(struct gen_ctx *ctx, const struct gen_loc *loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void gen_warning(struct gen_ctx *ctx, const struct gen_loc *loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- lexer ---- */

enum gen_tok_kind { TK_EOF, TK_IDENT, TK_INT, TK_FLOAT, TK_STRING, TK_SYM };

/* a lexical error, reported when the parser reaches the token it was met
 * in, as protoc reports it */
struct gen_lexerr {
	struct gen_lexerr *next;
	struct gen_loc loc;
	const char *msg;
};

struct gen_tok {
	enum gen_tok_kind kind;
	struct gen_loc loc;
	char *text;              /* ident, string value (decoded), number spelling */
	size_t len;              /* string value length (may hold NULs) */
	uint64_t ival;           /* TK_INT */
	bool overflow;           /* TK_INT: above 2^64-1, or no integer ("08") */
	char sym;                /* TK_SYM: any other byte protoc takes as a symbol */
	struct gen_lexerr *errs; /* met reading it (or the blanks and comments before it) */
};

/* Tokenises text as protoc's tokenizer does, keeping its lexical errors on
 * the tokens (reported by the parser); always ends with TK_EOF. */
struct gen_tok *gen_lex(struct gen_ctx *ctx, const char *path, const char *text, size_t len,
                        int *ntok);

/* ---- parser ---- */

/* Parses one file's text into f (path, dir, real, basename set by caller).
 * Returns false when it reported syntax errors. */
bool gen_parse(struct gen_ctx *ctx, struct gen_file *f, const char *text, size_t len);

/* ---- resolve ---- */

/* Loads `path` and, recursively, its imports; returns NULL when path cannot
 * be read or has syntax errors (protoc goes no further). An import not
 * found, unreadable, with syntax errors or closing a cycle is reported and
 * fails the file importing it; gen_resolve still builds that file, without
 * the import, as protoc does. */
struct gen_file *gen_load(struct gen_ctx *ctx, const char *path, bool input);
/* Resolves names and checks every loaded file, each after its imports; a
 * file with errors is dropped, a file importing it reports the import and
 * is built without it. False when a file had errors (or an input has syntax
 * errors: then nothing is built). */
bool gen_resolve(struct gen_ctx *ctx);
/* True when the header of f must include the header of im (f uses a type
 * of it, or re-exports it with `import public`); option-only imports are not
 * included. */
bool gen_import_needed(const struct gen_file *f, const struct gen_import *im);
/* The files one run writes: the inputs, plus what they need that nobody
 * else would generate: the built-in well-known types and proto2 files
 * imported for their types. Reports (as errors) the descriptor types an
 * imported file may use only while it is not generated. */
void gen_outputs(struct gen_ctx *ctx, struct gen_vec *out);
/* The generated path of f without extension: its name minus ".proto". */
char *gen_out_stem(struct gen_ctx *ctx, const struct gen_file *f);

/* ---- well-known types (wkt.c): our own definitions, embedded ---- */
/* the text of google/protobuf/NAME.proto when it is one of ours, else NULL */
const char *gen_wkt_text(const char *name, size_t *len);
/* ---- canonical proto text (print.c): what the reflection service embeds ---- */
void gen_print_proto(struct gen_ctx *ctx, const struct gen_file *f, struct gen_buf *out);

uint32_t gen_fnv1a(const char *s);
bool gen_is_scalar(enum gen_type t);
/* json is protoc's default JSON name of field name (underscores dropped, the
 * letter after one upper case) */
bool gen_is_default_json_name(const char *name, const char *json);
const char *gen_type_name(enum gen_type t);

/* ---- emitters ---- */

void gen_emit_h(struct gen_ctx *ctx, struct gen_file *f, struct gen_buf *out);
void gen_emit_c(struct gen_ctx *ctx, struct gen_file *f, struct gen_buf *out);
/* a streaming method's prototypes / functions (emit_stream.c) */
void gen_emit_stream_h(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_service *s,
                       const struct gen_method *m);
void gen_emit_stream_c(struct gen_ctx *ctx, struct gen_buf *o, const struct gen_method *m);

/* shared emitter helpers (emit_h.c) */
/* every message (pre-order, map entries included) and enum of a file */
void gen_collect(struct gen_ctx *ctx, const struct gen_file *f, struct gen_vec *msgs,
                 struct gen_vec *enums);
const char *gen_ctype(struct gen_ctx *ctx, const struct gen_field *fd); /* element type */
char *gen_upper(struct gen_ctx *ctx, const char *s);
/* a proto2 field's default as a C expression (emit_c.c): 7, INT64_C(-1),
 * 1.5f, pkg_E_B, "text" */
char *gen_default_c(struct gen_ctx *ctx, const struct gen_field *fd);

/* s as it can stand in a C block comment: a "*" "/" written "*\\/" and a
 * "/" "*" written "/\\*" (a file path, a default's C literal) */
char *gen_comment_text(struct gen_ctx *ctx, const char *s);

/* m has proto2 required fields (emit_c.c) */
bool gen_has_required(const struct gen_message *m);
/* the statement for an RPC payload of no bytes, the default message m: var
 * (an m *) gets X_init, or, when m has required fields, which the default
 * message lacks, rc (an int) gets RDMX_E_PROTOCOL */
char *gen_empty_payload(struct gen_ctx *ctx, const struct gen_message *m, const char *var,
                        const char *rc);
char *gen_guard(struct gen_ctx *ctx, const struct gen_file *f);

#endif
