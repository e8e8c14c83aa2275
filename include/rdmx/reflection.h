/* rdmx reflection: a server tells what it serves.
 *
 * rdmx_rpc_server_create registers rdmx.reflection.v1.Reflection (IDL:
 * rpc/idl/reflection.proto) on every server:
 *   List            -> every service with registered methods ("package.Service",
 *                      from the names given to rdmx_rpc_server_register), its
 *                      method names, and the IDL file that defines it when
 *                      one was added below;
 *   FileContaining  -> the IDL source of the file that defines a service
 *                      ("package.Service" or "package.Service/Method") or of
 *                      a file by name, then the added files it imports;
 *                      NOT_FOUND when no added file holds it.
 * The health and reflection IDL files are added on every server. Add the IDL
 * of your own services so that clients such as rdmx-call can turn JSON into
 * requests without a local copy of the .proto:
 *
 *     rdmx_rpc_server_add_reflection(server, "kv.proto", kv_proto_text);
 *
 * Threading: like rdmx_rpc_server_register (before serving, or from the
 * thread that drives the endpoints using the server). */
#ifndef RDMX_REFLECTION_H
#define RDMX_REFLECTION_H

#ifdef __cplusplus
extern "C" {
#endif

struct rdmx_rpc_server;

#define RDMX_REFLECTION_LIST_NAME "rdmx.reflection.v1.Reflection/List"
#define RDMX_REFLECTION_FILE_CONTAINING_NAME "rdmx.reflection.v1.Reflection/FileContaining"
#define RDMX_REFLECTION_MAX_FILE (1u << 20) /* bytes of IDL text per file */

/* Adds (or replaces, by name) an IDL file: `name` as imports spell it
 * ("kv.proto"), `idl_text` its whole text. Both are copied. The services the
 * file declares are found by a light scan (package, service and import
 * statements; comments skipped); the text is not otherwise checked.
 * Errors: RDMX_E_INVAL (NULL, empty name, text over RDMX_REFLECTION_MAX_FILE
 * or not NUL-terminated within it, not UTF-8), RDMX_E_NOMEM. */
int rdmx_rpc_server_add_reflection(struct rdmx_rpc_server *server, const char *name,
                                   const char *idl_text);

#ifdef __cplusplus
}
#endif
#endif
