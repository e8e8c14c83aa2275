/* libFuzzer target: rdmx-call's JSON layer (tools/rdmx-call/json.c: the
 * jansson load with its pre-pass for integers past int64; pbjson.c: JSON <->
 * msgpack by a schema). Schema: tests/unit/codegen/json/jsonmap.proto,
 * loaded once as rdmx-call loads one. Byte 0 picks the message type, the
 * rest is request JSON text, read twice: whole (json_parse, as -d TEXT) and
 * as a stream of values (json_parse_first, as -d @ reads them).
 * Properties: no crash, leak or sanitizer report; json_parse_first takes at
 * least one byte and no more than it was given, and those bytes parse alone
 * to the same value; what encodes decodes back to
 * JSON that parses and encodes again (abort, printing the texts, when not),
 * and prints the same the second time. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "pbjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const type_names[] = {"jsonmap.Scalars", "jsonmap.Repeated", "jsonmap.Maps",
                                         "jsonmap.Oneofs",  "jsonmap.Wkt",      "jsonmap.Nested"};
#define N_TYPES (sizeof(type_names) / sizeof(type_names[0]))

static struct pbschema schema;
static const struct gen_message *types[N_TYPES];

static void fatal(const char *what, const char *a, size_t alen, const char *b, size_t blen,
                  const char *err)
{
	fprintf(stderr,
	        "fuzz_json: %s\n--- input (%zu bytes):\n%.*s\n--- printed (%zu bytes):\n%.*s\n"
	        "--- error: %s\n",
	        what, alen, (int)alen, a ? a : "", blen, (int)blen, b ? b : "", err ? err : "");
	abort();
}

static void load_schema(void)
{
	const char *inc[] = {JSONMAP_DIR};

	if (types[0])
		return;
	if (pbschema_load(&schema, JSONMAP_DIR "/jsonmap.proto", inc, 1, stderr) != 0) {
		fprintf(stderr, "fuzz_json: cannot load %s/jsonmap.proto\n", JSONMAP_DIR);
		abort();
	}
	for (size_t i = 0; i < N_TYPES; i++) {
		types[i] = pbschema_message(&schema, type_names[i]);
		if (!types[i]) {
			fprintf(stderr, "fuzz_json: no message %s\n", type_names[i]);
			abort();
		}
	}
}

/* j (parsed from text[0..len)) -> msgpack -> JSON -> msgpack -> JSON */
static void round_trip(const struct gen_message *m, const json_t *j, const char *text, size_t len)
{
	struct jbuf mp = {0}, js = {0}, mp2 = {0}, js2 = {0};
	char err[512] = "";
	json_t *j2 = NULL;

	if (pbjson_encode(m, j, &mp, err, sizeof(err)) || mp.oom)
		goto out; /* refused: fine, as long as it said why */
	if (pbjson_decode(m, mp.data, mp.len, &js, err, sizeof(err)) || js.oom)
		goto out; /* protobuf may refuse to print it too (a Timestamp past 9999) */
	if (json_parse(js.data, js.len, &j2, err, sizeof(err)))
		fatal("printed JSON does not parse", text, len, js.data, js.len, err);
	if (pbjson_encode_text(m, js.data, &mp2, err, sizeof(err)))
		fatal("printed JSON does not encode as text", text, len, js.data, js.len, err);
	mp2.len = 0;
	if (pbjson_encode(m, j2, &mp2, err, sizeof(err)) || mp2.oom)
		fatal("printed JSON does not encode", text, len, js.data, js.len, err);
	if (pbjson_decode(m, mp2.data, mp2.len, &js2, err, sizeof(err)) || js2.oom)
		fatal("re-encoded message does not print", text, len, js.data, js.len, err);
	if (js2.len != js.len || memcmp(js2.data, js.data, js.len) != 0)
		fatal("printed JSON changes on a second round trip", js.data, js.len, js2.data,
		      js2.len, "");
out:
	json_free(j2);
	jbuf_free(&mp);
	jbuf_free(&js);
	jbuf_free(&mp2);
	jbuf_free(&js2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct gen_message *m;
	const char *text;
	size_t len, off;
	char err[512];
	json_t *j, *alone;

	load_schema();
	if (size < 1)
		return 0;
	m = types[data[0] % N_TYPES];
	text = (const char *)data + 1;
	len = size - 1;

	/* -d TEXT: one value */
	err[0] = '\0';
	if (json_parse(text, len, &j, err, sizeof(err)) == 0) {
		round_trip(m, j, text, len);
		json_decref(j);
	} else if (!err[0]) {
		fatal("json_parse failed without a reason", text, len, NULL, 0, err);
	}

	/* -d @: values one after another, as callstream.c reads them at EOF */
	for (off = 0; off < len;) {
		size_t used = (size_t)-1;

		err[0] = '\0';
		if (json_parse_first(text + off, len - off, &j, &used, err, sizeof(err))) {
			if (!err[0])
				fatal("json_parse_first failed without a reason", text, len, NULL,
				      0, err);
			break;
		}
		if (used == 0 || used > len - off) {
			char why[64];

			snprintf(why, sizeof(why), "used %zu of %zu at %zu", used, len - off, off);
			fatal("json_parse_first: used out of range", text, len, NULL, 0, why);
		}
		/* the bytes it took are that value on their own */
		if (json_parse(text + off, used, &alone, err, sizeof(err)))
			fatal("json_parse_first took bytes that do not parse alone", text + off,
			      used, text, len, err);
		if (!json_equal(j, alone))
			fatal("json_parse_first took bytes that parse alone to another value",
			      text + off, used, text, len, "");
		json_decref(alone);
		round_trip(m, j, text + off, used);
		json_decref(j);
		off += used;
	}
	return 0;
}
