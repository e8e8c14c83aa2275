/* rdmx-gen resolver internals shared by resolve.c (symbols, name lookup, C
 * names), resolve_load.c (loading files and imports), resolve_checks.c
 * (semantic checks, C identifier collisions), resolve_options.c (extensions
 * and custom option names), resolve_values.c (option values) and
 * resolve_defaults.c (proto2 defaults); private to codegen/. */
#ifndef RDMX_GEN_RESOLVE_H
#define RDMX_GEN_RESOLVE_H

#include "gen.h"

/* ---- a string -> pointer table (open addressing) ---- */

struct sym {
	const char *name;
	int kind; /* SYM_* */
	void *ptr;
	struct gen_file *file;
	struct gen_loc loc;
};

enum {
	SYM_PACKAGE = 1,
	SYM_MESSAGE,
	SYM_ENUM,
	SYM_VALUE,
	SYM_FIELD,
	SYM_ONEOF,
	SYM_SERVICE,
	SYM_METHOD
};

struct table {
	struct sym **slots;
	size_t cap, n;
};

/* the resolver state of one run (ctx->priv) */
struct resolver {
	struct gen_ctx *ctx;
	struct table syms;
	struct table exts;                   /* extension full name -> struct gen_ext */
	struct table ext_numbers;            /* "extendee/number" -> struct gen_ext */
	struct gen_vec stack;                /* files being loaded, for cycle reports */
	const char *last_owner, *last_other; /* last C name collision reported */
	struct gen_vec deferred;             /* struct deferred *: descriptor types of imports */
	struct gen_file *builtin_options;    /* rdmx-gen's descriptor.proto, parsed apart */
};

/* a field of an imported file whose type is a descriptor message rdmx-gen's
 * descriptor.proto leaves out: an error only when that file is generated */
struct deferred {
	struct gen_field *fd;
	struct gen_file *f;
};

/* The resolver of ctx, created (zeroed, in ctx's pool) on first use. */
struct resolver *gen_resolver(struct gen_ctx *ctx);
/* The symbol of t named name, NULL when none. */
struct sym *gen_table_get(struct table *t, const char *name);
/* Adds s to t (growing it from pool); s->name must not be in t yet. */
void gen_table_put(struct gen_pool *pool, struct table *t, struct sym *s);

/* What a SYM_* kind is called in diagnostics: "message", "enum value", ... */
const char *gen_kind_name(int kind);
void gen_not_defined(struct gen_ctx *ctx, const struct gen_loc *loc, const char *name,
                     const struct sym *s, const char *undefined, const struct gen_file *from);
/* The scope of a full name (what is before its last dot), "" at the root;
 * allocated from ctx's pool. */
const char *gen_scope_of(struct gen_ctx *ctx, const char *full);
/* The last part of a full name (a pointer into full). */
const char *gen_last_of(const char *full);
/* scope.name, or name when scope is "" (then name itself, not a copy). */
char *gen_qualify(struct gen_ctx *ctx, const char *scope, const char *name);
/* def is from or a file from imports, directly or through `import public`
 * of the imported file: from may use what def defines. */
bool gen_visible(const struct gen_file *from, const struct gen_file *def);
/* s is a symbol from may name (protoc's FindSymbol): defined in from or a
 * file it can see (gen_visible); a package when from, or a file it
 * imports or one such a file re-exports, is in it. */
bool gen_sym_visible(const struct gen_file *from, const struct sym *s);
/* Reports full (at loc, in f) as defined before: old, a symbol or an
 * extension; is_package: full is a package's name (then at f's `package`
 * when old is not one, from another file). protoc's words. */
void gen_report_defined(struct gen_ctx *ctx, const struct gen_loc *loc, const char *full,
                        const struct sym *old, bool is_package, const struct gen_file *f);
/* what gen_lookup looks among */
enum {
	GEN_LOOKUP_TYPES = 1, /* a simple name skips symbols that are not messages or enums */
	GEN_LOOKUP_EXTS = 2   /* the extensions too (after the symbols of one name) */
};
/* The symbol name (as written in scope, in file from) stands for, by
 * protoc's scoping rules (DescriptorBuilder::LookupSymbol): symbols from
 * cannot see are passed over; flags are GEN_LOOKUP_*. NULL when none; when
 * only symbols from cannot see match, the first of them (the caller reports
 * the missing import: check gen_sym_visible). undefined may be NULL; else
 * *undefined is set to the full name a dotted name stood for when the first
 * aggregate matched decides it and nothing from can see is defined there
 * (protoc's "undefine_resolved_name"), to NULL otherwise. */
struct sym *gen_lookup(struct gen_ctx *ctx, const struct gen_file *from, const char *scope,
                       const char *name, unsigned flags, const char **undefined);
/* name (as written in scope) names a message of protobuf's descriptor.proto
 * that rdmx-gen's own copy leaves out (it has the option messages only). */
bool gen_descriptor_message(struct gen_ctx *ctx, const char *scope, const char *name);
/* Reports name (at loc) as a descriptor message rdmx-gen does not support. */
void gen_descriptor_error(struct gen_ctx *ctx, const struct gen_loc *loc, const char *name);

/* ---- resolve_checks.c ---- */

/* The value of e named name, NULL when none. */
const struct gen_enum_value *gen_enum_value_named(const struct gen_enum *e, const char *name);
/* The range of ranges (struct gen_range *) n is in, NULL when none. */
const struct gen_range *gen_range_find(const struct gen_vec *ranges, int64_t n);
/* Reports extension range r not positive, empty or above max, in protoc's
 * words (BuildExtensionRange, ValidateMessageOptions). */
void gen_check_ext_range(struct gen_ctx *ctx, const struct gen_range *r);
void gen_check_ext_ranges_max(struct gen_ctx *ctx, const struct gen_message *m);
/* What protoc's parser refuses of e: allow_alias that says nothing, no
 * value, a value outside int32; then its reserved ranges one by one. */
void gen_check_enum_parsed(struct gen_ctx *ctx, const struct gen_enum *e);
/* e's reserved ranges overlapping, names reserved twice, values reserved;
 * after e's symbol, as protoc's BuildEnum. */
void gen_check_enum_reserved(struct gen_ctx *ctx, const struct gen_enum *e);
/* Two values of e with one number without allow_alias (protoc's
 * ValidateEnumOptions). */
void gen_check_enum_aliases(struct gen_ctx *ctx, const struct gen_enum *e);
/* A proto3 enum whose first value is not 0 (protoc's ValidateProto3Enum). */
void gen_check_enum_zero(struct gen_ctx *ctx, const struct gen_enum *e);
/* e's values stay distinct without its name as a prefix, case and
 * underscores, but aliases (an error in proto3, a warning in proto2) */
void gen_check_enum_value_names(struct gen_ctx *ctx, const struct gen_enum *e);
/* fd, of a proto3 message (containing: its full name), is not of a proto2
 * enum type */
void gen_check_proto3_enum_field(struct gen_ctx *ctx, const struct gen_field *fd,
                                 const char *containing);
/* Checks fd's options against its type as protoc does (ValidateFieldOptions):
 * lazy only on a message, packed only on a repeated number, bool or enum, no
 * field in a message set (container, the extendee for an extension: ext) and
 * only optional messages extending one, jstype (but JS_NORMAL) only on a
 * 64-bit integer, no json_name but the default one on an extension. */
void gen_check_field_options(struct gen_ctx *ctx, const struct gen_field *fd,
                             const struct gen_message *container, bool ext);
/* fd's number: positive, at most 2^29 - 1, outside 19000 to 19999 (protoc's
 * BuildFieldOrExtension). */
void gen_check_proto3_exts(struct gen_ctx *ctx, const struct gen_file *f,
                           const struct gen_message *m);
void gen_check_field_number(struct gen_ctx *ctx, const struct gen_field *fd, bool ext);
/* After m's symbol, as protoc's BuildMessage: reserved ranges overlapping,
 * names reserved twice, fields in an extension or reserved range or of a
 * reserved name, extension ranges overlapping a reserved or an earlier
 * extension range. */
void gen_check_message_numbers(struct gen_ctx *ctx, const struct gen_message *m);
/* m's oneofs without a field (protoc's CrossLinkMessage). */
void gen_check_oneofs(struct gen_ctx *ctx, const struct gen_message *m);
/* A proto3 message set, and fields of m whose names differ only in case and
 * underscores (protoc 3.21's JSON camel-case conflict, json_name aside). */
void gen_check_proto3_message(struct gen_ctx *ctx, const struct gen_message *m);
/* The members of m's generated struct that collide (rdmx-gen's own check). */
void gen_check_members(struct gen_ctx *ctx, struct gen_message *m);
/* Reports generated C names of input f that collide with each other or
 * with those of a file f imports; after defaults are resolved. */
void gen_check_c_names(struct gen_ctx *ctx, struct gen_file *f);

/* ---- resolve_options.c ---- */

/* Names x (its full name) and adds its symbol, reporting a name already
 * defined; where protoc's BuildExtension does, within its scope's build. */
void gen_build_ext(struct gen_ctx *ctx, struct gen_file *f, struct gen_ext *x);
/* Links x as protoc's CrossLinkField does: its extendee (undefined, or in
 * proto3 not a google.protobuf.*Options: nothing more is checked), its
 * number in a range of the extendee, its type, then its number not taken
 * by an extension of that extendee linked before (an error within a file,
 * a warning across files). */
void gen_link_ext(struct gen_ctx *ctx, struct gen_file *f, struct gen_ext *x);
/* Checks one custom or multi-part option name of f part by part as protoc
 * does, reporting the first part that is wrong, and records what its parts
 * name (o->resolved, parts' field, o->repeated; a plain name alone is
 * looked up in rdmx-gen's descriptor.proto only, and its value checked);
 * after every file's messages and extensions are resolved. */
void gen_check_optref(struct gen_ctx *ctx, struct gen_file *f, struct gen_optref *o);
/* Reports o, an option of f, set again on the same place by an option
 * before it (protoc's "was already set"): the same field, but for a
 * repeated one, a message an earlier option set a field of ((a).b = 1, then
 * (a) = {...}) or a field an earlier aggregate value set ((a) = { b: 1 },
 * then (a).b = 2; (a) = { [x.y]: 1 }, then (a).(y) = 2). After
 * gen_check_optref on o and those before it. False when reported. */
bool gen_check_option_twice(struct gen_ctx *ctx, const struct gen_file *f,
                            const struct gen_optref *o);

/* ---- resolve_values.c ---- */

/* Checks the value of o, a plain option name alone, against the type of
 * protobuf's option of that name, as protoc does, in its words; false (and
 * nothing reported) when rdmx-gen's descriptor.proto, 3.21's, has no option
 * of that name. */
bool gen_check_builtin_value(struct gen_ctx *ctx, const struct gen_optref *o);
/* options ("google.protobuf.FieldOptions") has a field name in rdmx-gen's
 * descriptor.proto (3.21's), whether the file imports it or not */
bool gen_builtin_option_known(struct gen_ctx *ctx, const char *options, const char *name);
/* Checks the value of o, an option of f whose name ends at fd (full: its
 * full name), against fd's type as protoc does, in its words: a constant
 * (type, range, enum value) or an aggregate read as protoc's text format
 * parser reads it (its first error, at the value). */
void gen_check_custom_value(struct gen_ctx *ctx, const struct gen_file *f,
                            const struct gen_optref *o, const struct gen_field *fd,
                            const char *full);

/* ---- resolve_defaults.c ---- */

/* Checks the proto2 [default = ...] of m's fields (nested messages included)
 * against their types and sets their values; a singular proto2 enum field
 * without one gets the enum's first value. After types are resolved. */
void gen_resolve_ext_defaults(struct gen_ctx *ctx, struct gen_file *f);
void gen_resolve_defaults(struct gen_ctx *ctx, struct gen_message *m);

#endif
