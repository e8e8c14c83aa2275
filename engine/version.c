/* rdmx_version(): the release this librdmx was built from. */
#include <rdmx/version.h>

const char *rdmx_version(void)
{
	return RDMX_VERSION_STRING;
}
