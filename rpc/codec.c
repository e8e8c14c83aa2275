/* Out-of-line parts of the msgpack codec used by generated code
 * (include/rdmx/codec.h): decoder set-up, skipping unknown values, integer
 * forms, string checks and copies, arena budget, server bindings. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <rdmx/codec.h>

int rdmx__dec_init(struct rdmx_dec *d, const void *src, size_t len, struct rdmx_arena *arena,
                   const struct rdmx_decode_opts *opts, size_t ratio)
{
	unsigned depth = RDMX_DECODE_DEFAULT_DEPTH;
	size_t budget;
	if (!src && len)
		return RDMX_E_INVAL;
	if (opts && opts->max_depth)
		depth = opts->max_depth < RDMX_DECODE_MAX_DEPTH ? opts->max_depth
		                                                : RDMX_DECODE_MAX_DEPTH;
	if (opts && opts->max_alloc)
		budget = opts->max_alloc;
	else {
		if (ratio < RDMX_DECODE_ALLOC_FACTOR)
			ratio = RDMX_DECODE_ALLOC_FACTOR;
		if (len > (SIZE_MAX - RDMX_DECODE_ALLOC_FLOOR) / ratio)
			budget = SIZE_MAX;
		else
			budget = len * ratio + RDMX_DECODE_ALLOC_FLOOR;
	}
	d->p = (const uint8_t *)src;
	d->end = d->p + len;
	d->arena = arena;
	d->budget = budget;
	d->depth = depth;
	d->copy = opts && opts->copy;
	return 0;
}

int rdmx__dec_int_slow(struct rdmx_dec *d, int64_t *v, uint64_t *u, bool *neg)
{
	const uint8_t *p = d->p;
	size_t left = rdmx__dec_left(d), n;
	int64_t s;
	if (left < 1)
		return RDMX_E_PROTOCOL;
	if (p[0] < 0x80 || p[0] >= 0xe0) {
		s = p[0] < 0x80 ? p[0] : (int64_t)p[0] - 256;
		n = 1;
		goto sign;
	}
	switch (p[0]) {
	case 0xcc:
		n = 2;
		*u = left >= n ? p[1] : 0;
		break;
	case 0xcd:
		n = 3;
		*u = left >= n ? rdmx__rd16(p + 1) : 0;
		break;
	case 0xce:
		n = 5;
		*u = left >= n ? rdmx__rd32(p + 1) : 0;
		break;
	case 0xcf:
		n = 9;
		*u = left >= n ? rdmx__rd64(p + 1) : 0;
		break;
	case 0xd0:
		n = 2;
		s = left >= n ? (int8_t)p[1] : 0;
		goto sign_checked;
	case 0xd1:
		n = 3;
		s = left >= n ? (int16_t)rdmx__rd16(p + 1) : 0;
		goto sign_checked;
	case 0xd2:
		n = 5;
		s = left >= n ? (int32_t)rdmx__rd32(p + 1) : 0;
		goto sign_checked;
	case 0xd3:
		n = 9;
		s = left >= n ? (int64_t)rdmx__rd64(p + 1) : 0;
		goto sign_checked;
	default:
		return RDMX_E_PROTOCOL;
	}
	if (left < n)
		return RDMX_E_PROTOCOL;
	*neg = false;
	*v = *u <= (uint64_t)INT64_MAX ? (int64_t)*u : INT64_MAX;
	d->p += n;
	return 0;
sign_checked:
	if (left < n)
		return RDMX_E_PROTOCOL;
sign:
	*neg = s < 0;
	*v = s;
	*u = s < 0 ? 0 : (uint64_t)s;
	d->p += n;
	return 0;
}

/* Bytes a header + payload of this type byte declares, or 0 for containers
 * (handled by the caller) and -1 for 0xc1 / truncated headers. */
static int skip_one(struct rdmx_dec *d, uint64_t *count)
{
	const uint8_t *p = d->p;
	size_t left = rdmx__dec_left(d), n;
	uint8_t b;
	*count = 0;
	if (left < 1)
		return RDMX_E_PROTOCOL;
	b = p[0];
	if (b < 0x80 || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
		n = 1;
	} else if (b <= 0x8f) {
		*count = 2u * (b & 0x0f);
		n = 1;
	} else if (b <= 0x9f) {
		*count = b & 0x0f;
		n = 1;
	} else if (b <= 0xbf) {
		n = 1 + (size_t)(b & 0x1f);
	} else {
		switch (b) {
		case 0xcc:
		case 0xd0:
			n = 2;
			break;
		case 0xcd:
		case 0xd1:
			n = 3;
			break;
		case 0xca:
		case 0xce:
		case 0xd2:
			n = 5;
			break;
		case 0xcb:
		case 0xcf:
		case 0xd3:
			n = 9;
			break;
		case 0xd4:
			n = 3;
			break;
		case 0xd5:
			n = 4;
			break;
		case 0xd6:
			n = 6;
			break;
		case 0xd7:
			n = 10;
			break;
		case 0xd8:
			n = 18;
			break;
		case 0xc4:
		case 0xd9:
			if (left < 2)
				return RDMX_E_PROTOCOL;
			n = 2 + (size_t)p[1];
			break;
		case 0xc5:
		case 0xda:
			if (left < 3)
				return RDMX_E_PROTOCOL;
			n = 3 + (size_t)rdmx__rd16(p + 1);
			break;
		case 0xc6:
		case 0xdb:
			if (left < 5)
				return RDMX_E_PROTOCOL;
			n = 5 + (size_t)rdmx__rd32(p + 1);
			break;
		case 0xc7:
			if (left < 3)
				return RDMX_E_PROTOCOL;
			n = 3 + (size_t)p[1];
			break;
		case 0xc8:
			if (left < 4)
				return RDMX_E_PROTOCOL;
			n = 4 + (size_t)rdmx__rd16(p + 1);
			break;
		case 0xc9:
			if (left < 6)
				return RDMX_E_PROTOCOL;
			n = 6 + (size_t)rdmx__rd32(p + 1);
			break;
		case 0xdc:
		case 0xdd:
			n = b == 0xdc ? 3 : 5;
			if (left < n)
				return RDMX_E_PROTOCOL;
			*count = b == 0xdc ? rdmx__rd16(p + 1) : rdmx__rd32(p + 1);
			break;
		case 0xde:
		case 0xdf:
			n = b == 0xde ? 3 : 5;
			if (left < n)
				return RDMX_E_PROTOCOL;
			*count = 2u * (uint64_t)(b == 0xde ? rdmx__rd16(p + 1) : rdmx__rd32(p + 1));
			break;
		default: /* 0xc1 is never used */
			return RDMX_E_PROTOCOL;
		}
	}
	if (n > left)
		return RDMX_E_PROTOCOL;
	d->p += n;
	return (b & 0xf0) == 0x80 || (b & 0xf0) == 0x90 || (b >= 0xdc && b <= 0xdf) ? 1 : 0;
}

int rdmx__dec_skip(struct rdmx_dec *d)
{
	uint64_t stack[RDMX_DECODE_MAX_DEPTH];
	uint64_t pending = 1, count;
	unsigned top = 0;
	int rc;
	for (;;) {
		while (pending == 0) {
			if (top == 0)
				return 0;
			pending = stack[--top];
		}
		pending--;
		rc = skip_one(d, &count);
		if (rc < 0)
			return rc;
		if (rc == 0)
			continue;
		/* a container: one nesting level, and every element needs a byte */
		if (top >= d->depth || top >= RDMX_DECODE_MAX_DEPTH)
			return RDMX_E_PROTOCOL;
		if (count > rdmx__dec_left(d))
			return RDMX_E_PROTOCOL;
		if (count == 0)
			continue;
		stack[top++] = pending;
		pending = count;
	}
}

void *rdmx__dec_alloc(struct rdmx_dec *d, size_t n, size_t size, int *rc)
{
	size_t total;
	void *p;
	if (n == 0)
		return NULL;
	if (size && n > SIZE_MAX / size) {
		*rc = RDMX_E_TOO_BIG;
		return NULL;
	}
	total = n * size;
	if (total > SIZE_MAX - 7) {
		*rc = RDMX_E_TOO_BIG;
		return NULL;
	}
	total = (total + 7) & ~(size_t)7; /* charged as the arena rounds */
	if (total > d->budget) {
		*rc = RDMX_E_TOO_BIG;
		return NULL;
	}
	if (!d->arena) {
		*rc = RDMX_E_INVAL;
		return NULL;
	}
	p = rdmx_arena_alloc(d->arena, total);
	if (!p) {
		*rc = d->arena->limit ? RDMX_E_TOO_BIG : RDMX_E_NOMEM;
		return NULL;
	}
	d->budget -= total;
	memset(p, 0, total);
	return p;
}

int rdmx__dec_text(struct rdmx_dec *d, const uint8_t *p, size_t n, bool utf8, const void **out)
{
	uint8_t *copy;
	int rc = 0;
	if (utf8 && !rdmx__utf8_valid(p, n))
		return RDMX_E_PROTOCOL;
	if (!d->copy) {
		*out = p;
		return 0;
	}
	if (n == 0) {
		*out = "";
		return 0;
	}
	copy = rdmx__dec_alloc(d, n + 1, 1, &rc);
	if (!copy)
		return rc;
	memcpy(copy, p, n);
	copy[n] = 0;
	*out = copy;
	return 0;
}

/* RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF. */
bool rdmx__utf8_valid(const uint8_t *p, size_t n)
{
	const uint8_t *end = p + n;
	while (p < end) {
		uint64_t w;
		uint8_t b;
		if ((size_t)(end - p) >= 8) {
			memcpy(&w, p, 8);
			if ((w & 0x8080808080808080ull) == 0) {
				p += 8;
				continue;
			}
		}
		b = *p;
		if (b < 0x80) {
			p++;
		} else if (b >= 0xc2 && b <= 0xdf) {
			if (end - p < 2 || (p[1] & 0xc0) != 0x80)
				return false;
			p += 2;
		} else if (b >= 0xe0 && b <= 0xef) {
			if (end - p < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
				return false;
			if (b == 0xe0 && p[1] < 0xa0)
				return false;
			if (b == 0xed && p[1] > 0x9f)
				return false;
			p += 3;
		} else if (b >= 0xf0 && b <= 0xf4) {
			if (end - p < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 ||
			    (p[3] & 0xc0) != 0x80)
				return false;
			if (b == 0xf0 && p[1] < 0x90)
				return false;
			if (b == 0xf4 && p[1] > 0x8f)
				return false;
			p += 4;
		} else {
			return false;
		}
	}
	return true;
}

int rdmx__rpc_status_fill(struct rdmx_rpc_status *status, struct rdmx_arena *arena, int code,
                          const char *message)
{
	char *copy = NULL;
	if (!status)
		return 0;
	if (message && arena) {
		size_t n = strlen(message);
		copy = rdmx_arena_alloc(arena, n + 1);
		if (!copy)
			return RDMX_E_NOMEM;
		memcpy(copy, message, n + 1);
	}
	status->code = code;
	status->message = copy;
	return 0;
}

/* ---- server bindings ------------------------------------------------------ */

struct binding {
	struct binding *next;
	const struct rdmx_rpc_server *server;
	void *data;
};

static pthread_mutex_t bindings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct binding *bindings;

int rdmx__codec_keep_binding(const struct rdmx_rpc_server *server, void *data)
{
	struct binding *b = malloc(sizeof(*b));
	if (!b)
		return RDMX_E_NOMEM;
	b->server = server;
	b->data = data;
	pthread_mutex_lock(&bindings_lock);
	b->next = bindings;
	bindings = b;
	pthread_mutex_unlock(&bindings_lock);
	return 0;
}

void rdmx_codec_release_bindings(const struct rdmx_rpc_server *server)
{
	struct binding **pp, *b;
	pthread_mutex_lock(&bindings_lock);
	pp = &bindings;
	while ((b = *pp) != NULL) {
		if (b->server == server) {
			*pp = b->next;
			free(b->data);
			free(b);
		} else {
			pp = &b->next;
		}
	}
	pthread_mutex_unlock(&bindings_lock);
}
