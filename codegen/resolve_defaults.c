/* rdmx-gen: proto2 defaults (`[default = ...]`), checked against their
 * field's type and turned into the values the emitters use. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "resolve.h"

/* a whole decimal, hex or octal integer, sign included, within [lo, hi] */
static bool default_signed(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
	char *end;
	long long v;
	if (!s[0] || (s[0] != '-' && s[0] != '+' && (s[0] < '0' || s[0] > '9')))
		return false;
	errno = 0;
	v = strtoll(s, &end, 0);
	if (*end || errno == ERANGE || v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

static bool default_unsigned(const char *s, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;
	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end || errno == ERANGE || v > hi)
		return false;
	*out = v;
	return true;
}

/* a number, inf or nan with an optional sign; a float field's value is the
 * double rounded to float (protoc sends the double's shortest spelling, so
 * both front ends round the same double) */
static bool default_float(const char *s, bool is_float, double *out)
{
	const char *a = s[0] == '-' || s[0] == '+' ? s + 1 : s;
	char *end;
	double v;
	if (strcmp(a, "inf") == 0)
		v = HUGE_VAL;
	else if (strcmp(a, "nan") == 0)
		v = NAN;
	else if (a[0] >= '0' && a[0] <= '9' && !strpbrk(a, ".eE") &&
	         (a[1] == 'x' || a[1] == 'X' || a[0] == '0')) {
		/* a hex or octal integer, as protoc reads it (strtod takes 010
		 * for ten) */
		unsigned long long u;
		errno = 0;
		u = strtoull(a, &end, 0);
		if (*end || errno == ERANGE)
			return false;
		v = (double)u;
	} else if ((a[0] >= '0' && a[0] <= '9') || a[0] == '.') {
		v = strtod(a, &end);
		if (*end)
			return false;
	} else {
		return false;
	}
	if (s[0] == '-')
		v = -v;
	*out = is_float ? (double)(float)v : v;
	return true;
}

/* text (a default, sign included) is an integer literal: then one that
 * does not fit is out of range, in protoc's words */
static bool is_integer_text(const char *text)
{
	const char *a = text[0] == '-' ? text + 1 : text;
	if (a[0] == '0' && (a[1] == 'x' || a[1] == 'X'))
		return a[2] && strspn(a + 2, "0123456789abcdefABCDEF") == strlen(a + 2);
	return a[0] && strspn(a, "0123456789") == strlen(a);
}

/* protoc's words for a default that does not fit fd's type (its parser's,
 * ParseDefaultAssignment, and DescriptorBuilder's), at protoc's place:
 * after a number's '-' */
static void default_error(struct gen_ctx *ctx, const struct gen_field *fd)
{
	const struct gen_default *d = fd->def;
	bool sign = !d->string && d->text[0] == '-';
	const struct gen_loc *num = sign ? &d->num_loc : &d->loc;
	uint64_t max = fd->type == GT_UINT32 || fd->type == GT_FIXED32 ? UINT32_MAX : UINT64_MAX, v;
	switch (fd->type) {
	case GT_UINT32:
	case GT_FIXED32:
	case GT_UINT64:
	case GT_FIXED64:
		if (sign) {
			/* protoc's parser refuses the '-', then reads the number
			 * after it as an integer of the field */
			gen_error(ctx, num, "Unsigned field can't have negative default value.");
			if (!is_integer_text(d->text))
				gen_error(ctx, num, "Expected integer for field default value.");
			else if (!default_unsigned(d->text + 1, max, &v))
				gen_error(ctx, num, "Integer out of range.");
			return;
		}
		/* fall through */
	case GT_INT32:
	case GT_SINT32:
	case GT_SFIXED32:
	case GT_INT64:
	case GT_SINT64:
	case GT_SFIXED64:
		gen_error(ctx, num, "%s",
		          !d->string && is_integer_text(d->text)
		              ? "Integer out of range."
		              : "Expected integer for field default value.");
		return;
	case GT_FLOAT:
	case GT_DOUBLE:
		gen_error(ctx, num, "Expected number.");
		return;
	case GT_BOOL:
		gen_error(ctx, &d->loc, "Expected \"true\" or \"false\".");
		return;
	case GT_STRING:
		gen_error(ctx, &d->loc, "Expected string for field default value.");
		return;
	default:
		gen_error(ctx, &d->loc, "Expected string.");
		return;
	}
}

static void check_default(struct gen_ctx *ctx, struct gen_field *fd)
{
	struct gen_default *d = fd->def;
	bool ok = !d->string;
	if (fd->label == GL_REPEATED) {
		gen_error(ctx, &d->loc, "Repeated fields can't have default values.");
		return;
	}
	switch (fd->type) {
	case GT_MESSAGE:
		gen_error(ctx, &d->loc, "Messages can't have default values.");
		return;
	case GT_INT32:
	case GT_SINT32:
	case GT_SFIXED32:
		ok = ok && default_signed(d->text, INT32_MIN, INT32_MAX, &d->i);
		d->zero = d->i == 0;
		break;
	case GT_INT64:
	case GT_SINT64:
	case GT_SFIXED64:
		ok = ok && default_signed(d->text, INT64_MIN, INT64_MAX, &d->i);
		d->zero = d->i == 0;
		break;
	case GT_UINT32:
	case GT_FIXED32:
		ok = ok && default_unsigned(d->text, UINT32_MAX, &d->u);
		d->zero = d->u == 0;
		break;
	case GT_UINT64:
	case GT_FIXED64:
		ok = ok && default_unsigned(d->text, UINT64_MAX, &d->u);
		d->zero = d->u == 0;
		break;
	case GT_FLOAT:
	case GT_DOUBLE:
		ok = ok && default_float(d->text, fd->type == GT_FLOAT, &d->d);
		d->zero = d->d == 0 && !signbit(d->d);
		break;
	case GT_BOOL:
		ok = ok && (strcmp(d->text, "true") == 0 || strcmp(d->text, "false") == 0);
		d->i = ok && d->text[0] == 't';
		d->zero = !d->i;
		break;
	case GT_STRING:
		/* the value may hold NULs (protoc-gen-rdmx gets them whole too) */
		ok = d->string;
		d->zero = d->len == 0;
		break;
	case GT_BYTES:
		ok = d->string;
		d->zero = d->len == 0;
		break;
	case GT_ENUM:
		if (!ok || !(isalpha((unsigned char)d->text[0]) || d->text[0] == '_')) {
			gen_error(ctx, &d->loc,
			          "Default value for an enum field must be an identifier.");
			return;
		}
		d->ev = gen_enum_value_named(fd->en, d->text);
		if (!d->ev) {
			gen_error(ctx, &d->loc, "Enum type \"%s\" has no value named \"%s\".",
			          fd->en->full_name, d->text);
			return;
		}
		d->zero = d->ev->number == 0;
		break;
	default:
		return;
	}
	if (!ok)
		default_error(ctx, fd);
}

/* checks the defaults of m's fields; a singular proto2 enum field without
 * one (outside a oneof, whose union keeps no default) defaults to the enum's
 * first value, as in protobuf */
void gen_resolve_defaults(struct gen_ctx *ctx, struct gen_message *m)
{
	int i;
	for (i = 0; i < m->fields.n; i++) {
		struct gen_field *fd = m->fields.items[i];
		if (fd->def) {
			check_default(ctx, fd);
		} else if (m->file->proto2 && !m->map_entry && fd->type == GT_ENUM &&
		           fd->label != GL_REPEATED && fd->oneof < 0 && fd->en->values.n) {
			const struct gen_enum_value *first = fd->en->values.items[0];
			if (first->number != 0) {
				fd->def = gen_alloc(&ctx->pool, sizeof(*fd->def));
				fd->def->text = first->name;
				fd->def->loc = fd->loc;
				fd->def->ev = first;
			}
		}
	}
	for (i = 0; i < m->messages.n; i++)
		gen_resolve_defaults(ctx, m->messages.items[i]);
}

/* the defaults of f's extensions, checked as a field's (not generated) */
void gen_resolve_ext_defaults(struct gen_ctx *ctx, struct gen_file *f)
{
	int i;
	for (i = 0; i < f->exts.n; i++) {
		struct gen_ext *x = f->exts.items[i];
		if (x->field && x->field->def)
			check_default(ctx, x->field);
	}
}
