/* rdmx version: the release this header belongs to, and the one of the
 * library a program runs with.
 *
 * The macros are fixed when the program is compiled; rdmx_version() tells
 * the librdmx actually loaded at run time (they differ when a program built
 * against one release runs with another of the same SONAME: see
 * docs/packaging.md for the SONAME policy). The numbers follow CMake's
 * project(VERSION): the build checks that this header agrees with it. */
#ifndef RDMX_VERSION_H
#define RDMX_VERSION_H

#ifdef __cplusplus
extern "C" {
#endif

#define RDMX_VERSION_MAJOR 0
#define RDMX_VERSION_MINOR 1
#define RDMX_VERSION_PATCH 0
/* "MAJOR.MINOR.PATCH" */
#define RDMX_VERSION_STRING "0.1.0"
/* one number for comparisons: RDMX_VERSION >= RDMX_VERSION_AT(0, 2, 0) */
#define RDMX_VERSION_AT(major, minor, patch) (((major) << 16) | ((minor) << 8) | (patch))
#define RDMX_VERSION RDMX_VERSION_AT(RDMX_VERSION_MAJOR, RDMX_VERSION_MINOR, RDMX_VERSION_PATCH)

/* The version of the loaded librdmx, "MAJOR.MINOR.PATCH" (RDMX_VERSION_STRING
 * of the release it was built from). A static string: never NULL, never
 * freed. Safe from any thread, before any other call. */
const char *rdmx_version(void);

#ifdef __cplusplus
}
#endif

#endif
