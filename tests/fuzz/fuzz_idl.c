/* libFuzzer target: the IDL front end and emitters of rdmx-gen on arbitrary
 * text (no file system: imports are never found). Nothing may crash, leak or
 * hang; a schema that resolves must also emit. */
#include <stddef.h>
#include <stdint.h>

#include "gen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gen_ctx ctx;
	struct gen_file *f;
	if (size > 64 * 1024)
		return 0;
	gen_ctx_init(&ctx, NULL);
	ctx.mem_path = "fuzz.proto";
	ctx.mem_text = (const char *)data;
	ctx.mem_len = size;
	f = gen_load(&ctx, "fuzz.proto", true);
	if (f && gen_resolve(&ctx)) {
		struct gen_buf h = {0}, c = {0};
		gen_emit_h(&ctx, f, &h);
		gen_emit_c(&ctx, f, &c);
		gen_buf_free(&h);
		gen_buf_free(&c);
	}
	gen_ctx_fini(&ctx);
	return 0;
}
