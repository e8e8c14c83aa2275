/* The log's one helper with a body (common/log.h): peer text escaped for a
 * log line. */
#include "common/log.h"

/* The escape of byte c into e[4]: its length. */
static size_t escape_byte(unsigned char c, char *e)
{
	static const char hex[] = "0123456789abcdef";

	if (c == '\\') {
		e[0] = e[1] = '\\';
		return 2;
	}
	if (c >= 0x20 && c < 0x7f) {
		e[0] = (char)c;
		return 1;
	}
	e[0] = '\\';
	e[1] = 'x';
	e[2] = hex[c >> 4];
	e[3] = hex[c & 0xf];
	return 4;
}

const char *rdmx__log_escape(const void *text, size_t len, char *out, size_t out_len)
{
	const unsigned char *p = text;
	size_t need = 0, limit, o = 0;
	char e[4];

	if (!out_len)
		return "";
	for (size_t i = 0; i < len; i++)
		need += escape_byte(p[i], e);
	/* all of it, or whole escapes with room left for "..." */
	limit = need < out_len ? need : (out_len > 4 ? out_len - 4 : 0);
	for (size_t i = 0; i < len; i++) {
		size_t n = escape_byte(p[i], e);

		if (o + n > limit)
			break;
		memcpy(out + o, e, n);
		o += n;
	}
	for (int dots = 0; need >= out_len && dots < 3 && o + 1 < out_len; dots++)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}
