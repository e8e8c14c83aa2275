/* pbjson_check (pbjson_check.h). */
#include "pbjson_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/status.h>

int pbjson_round_trip(const struct gen_message *m, const struct type_ops *ops, const char *input,
                      struct jbuf *out, char *why, size_t wlen)
{
	struct jbuf wire = {0};
	struct rdmx_arena arena;
	uint8_t *bytes = NULL;
	void *msg = NULL;
	char err[512] = "";
	int rc, ret = -1;
	size_t n;

	memset(out, 0, sizeof(*out));
	rdmx_arena_init(&arena, NULL, 0, 0);
	if (pbjson_encode_text(m, input, &wire, err, sizeof(err))) {
		snprintf(why, wlen, "pbjson refused the input: %s", err);
		goto out;
	}
	msg = calloc(1, ops->size);
	rc = msg ? ops->dec(msg, wire.data ? wire.data : "", wire.len, &arena) : RDMX_E_NOMEM;
	if (rc) {
		snprintf(why, wlen, "generated decoder: %s", rdmx_err_name(rc));
		goto out;
	}
	n = ops->enc_size(msg);
	bytes = malloc(n ? n : 1);
	rc = bytes ? ops->enc(msg, bytes, n) : RDMX_E_NOMEM;
	if (rc) {
		snprintf(why, wlen, "generated encoder: %s", rdmx_err_name(rc));
		goto out;
	}
	if (pbjson_decode(m, bytes, n, out, err, sizeof(err))) {
		snprintf(why, wlen, "printing: %s", err);
		jbuf_free(out);
		goto out;
	}
	ret = 0;
out:
	free(bytes);
	free(msg);
	jbuf_free(&wire);
	rdmx_arena_fini(&arena);
	return ret;
}

static bool same_object(const json_t *a, const json_t *b, bool by_value, char *path, size_t plen,
                        char *why, size_t wlen)
{
	size_t len = strlen(path);
	const char *k;
	json_t *v;

	if (json_object_size(a) != json_object_size(b)) {
		snprintf(why, wlen, "%s: %zu members, want %zu", path, json_object_size(a),
		         json_object_size(b));
		return false;
	}
	json_object_foreach((json_t *)b, k, v)
	{
		const json_t *o = json_object_get(a, k);

		if (!o) {
			snprintf(why, wlen, "%s: member \"%s\" missing", path, k);
			return false;
		}
		snprintf(path + len, plen - len, ".%s", k);
		if (!json_same(o, v, by_value, path, plen, why, wlen))
			return false;
		path[len] = '\0';
	}
	return true;
}

static bool same_array(const json_t *a, const json_t *b, bool by_value, char *path, size_t plen,
                       char *why, size_t wlen)
{
	size_t len = strlen(path);

	if (json_array_size(a) != json_array_size(b)) {
		snprintf(why, wlen, "%s: %zu elements, want %zu", path, json_array_size(a),
		         json_array_size(b));
		return false;
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		snprintf(path + len, plen - len, "[%zu]", i);
		if (!json_same(json_array_get(a, i), json_array_get(b, i), by_value, path, plen,
		               why, wlen))
			return false;
		path[len] = '\0';
	}
	return true;
}

bool json_same(const json_t *a, const json_t *b, bool numbers_by_value, char *path, size_t plen,
               char *why, size_t wlen)
{
	if (numbers_by_value && json_is_number(a) && json_is_number(b)) {
		if (json_number_value(a) == json_number_value(b))
			return true;
		snprintf(why, wlen, "%s: %.17g, want %.17g", path, json_number_value(a),
		         json_number_value(b));
		return false;
	}
	if (json_typeof(a) != json_typeof(b)) {
		snprintf(why, wlen, "%s: JSON types %d and %d differ", path, json_typeof(a),
		         json_typeof(b));
		return false;
	}
	switch (json_typeof(a)) {
	case JSON_OBJECT:
		return same_object(a, b, numbers_by_value, path, plen, why, wlen);
	case JSON_ARRAY:
		return same_array(a, b, numbers_by_value, path, plen, why, wlen);
	case JSON_STRING:
		if (json_string_length(a) != json_string_length(b) ||
		    memcmp(json_string_value(a), json_string_value(b), json_string_length(a))) {
			snprintf(why, wlen, "%s: \"%s\", want \"%s\"", path, json_string_value(a),
			         json_string_value(b));
			return false;
		}
		return true;
	case JSON_INTEGER:
		if (json_integer_value(a) != json_integer_value(b)) {
			snprintf(why, wlen,
			         "%s: %" JSON_INTEGER_FORMAT ", want %" JSON_INTEGER_FORMAT, path,
			         json_integer_value(a), json_integer_value(b));
			return false;
		}
		return true;
	default: /* true, false, null: the type says it all; reals: by_value */
		return true;
	}
}
