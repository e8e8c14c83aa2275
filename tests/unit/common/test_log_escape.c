/* rdmx__log_escape (common/log.h): peer text made fit for a log line. */
#include <criterion/criterion.h>

#include <string.h>

#include "common/log.h"

/* text[len] escaped into a buffer of out_len bytes (at most 64). */
static const char *esc(const char *text, size_t len, size_t out_len)
{
	static char out[64 + 8];
	const char *r;

	cr_assert_leq(out_len, 64);
	memset(out, 'Z', sizeof(out));
	r = rdmx__log_escape(text, len, out, out_len);

	if (out_len) {
		cr_assert_eq(r, out);
		cr_assert_lt(strlen(out), out_len, "wrote past out_len");
	}
	for (size_t i = out_len; i < sizeof(out); i++)
		cr_assert_eq(out[i], 'Z', "byte %zu past out_len written", i);
	return r;
}

#define ESC(lit, out_len) esc(lit, sizeof(lit) - 1, out_len)

Test(log_escape, printable_text_as_is)
{
	cr_assert_str_eq(ESC("refused by the server application", 64),
	                 "refused by the server application");
	cr_assert_str_eq(ESC(" ~!\"#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}", 64),
	                 " ~!\"#$%&'()*+,-./09:;<=>?@AZ[]^_`az{|}");
	cr_assert_str_eq(ESC("", 64), "");
	cr_assert_str_eq(esc(NULL, 0, 8), "");
}

Test(log_escape, control_and_high_bytes_as_hex)
{
	cr_assert_str_eq(ESC("no\nrdmx error: forged", 64), "no\\x0ardmx error: forged");
	cr_assert_str_eq(ESC("a\r\tb\x1b[2Kc", 64), "a\\x0d\\x09b\\x1b[2Kc");
	cr_assert_str_eq(ESC("\x00\x01\x1f\x7f\x80\xff", 64), "\\x00\\x01\\x1f\\x7f\\x80\\xff");
}

/* a backslash the peer sent cannot pass for an escape */
Test(log_escape, backslash_doubled)
{
	cr_assert_str_eq(ESC("a\\x0ab", 64), "a\\\\x0ab");
	cr_assert_str_eq(ESC("\\", 64), "\\\\");
}

Test(log_escape, fits_exactly)
{
	cr_assert_str_eq(ESC("abc", 4), "abc");
	cr_assert_str_eq(ESC("\n", 5), "\\x0a");
}

/* cut at a whole escape, the cut marked */
Test(log_escape, too_long_is_cut_with_dots)
{
	cr_assert_str_eq(ESC("abcdefghij", 8), "abcd...");
	cr_assert_str_eq(ESC("abcd", 4), "...");
	cr_assert_str_eq(ESC("\n\n\n", 8), "\\x0a...");
	cr_assert_str_eq(ESC("a\n\n", 8), "a...");
	cr_assert_str_eq(ESC("a\\\\\\\\", 8), "a\\\\...");
}

Test(log_escape, tiny_buffers)
{
	char out[1] = {'Z'};

	cr_assert_str_eq(rdmx__log_escape("abc", 3, out, 0), "");
	cr_assert_eq(out[0], 'Z', "wrote into a buffer of 0 bytes");
	cr_assert_str_eq(ESC("abc", 1), "");
	cr_assert_str_eq(ESC("abc", 2), ".");
	cr_assert_str_eq(ESC("abc", 3), "..");
}
