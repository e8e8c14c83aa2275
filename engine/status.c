/* Status codes: text and symbolic names from the single list in status.h. */
#include <rdmx/status.h>

const char *rdmx_strerror(int status)
{
	switch (status) {
#define RDMX__STATUS_TEXT(name, value, text)                                                       \
	case (value):                                                                              \
		return (text);
		RDMX_STATUS_LIST(RDMX__STATUS_TEXT)
#undef RDMX__STATUS_TEXT
	default:
		return "unknown error";
	}
}

const char *rdmx_err_name(int status)
{
	switch (status) {
#define RDMX__STATUS_NAME(name, value, text)                                                       \
	case (value):                                                                              \
		return #name;
		RDMX_STATUS_LIST(RDMX__STATUS_NAME)
#undef RDMX__STATUS_NAME
	default:
		return "UNKNOWN";
	}
}
