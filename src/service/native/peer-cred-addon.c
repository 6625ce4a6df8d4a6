/*
 * peer-cred.node: `peerCredentials(fd)` → { uid, pid } of the process at the other end of a connected
 * Unix socket, asked in-process with getsockopt(SO_PEERCRED).
 *
 * Why native: Node cannot ask (net.Socket exposes no getsockopt), and the service must know who
 * connected before it answers anything — the socket's mode 0600 is the first wall, the peer's uid the
 * second. This used to be a helper program spawned per accepted connection (p50 57 ms under load, most
 * of a CLI call); asked in-process it costs one syscall.
 *
 * Why our own: no maintained npm package does SO_PEERCRED (checked 2026-12: `unix-socket-credentials`
 * 0.1.3 needs the long-dead `ffi` 1.2 and builds for no current Node; `node-unix-socket` does
 * SO_REUSEPORT and SEQPACKET/DGRAM sockets but no peer credentials; `unix-dgram` is datagrams only).
 *
 * Why Node-API: it is ABI-stable, so the one .node that scripts/build-native.mjs compiles loads in
 * Node 20 and in Electron's newer Node (main/core-host.ts runs the service with Electron as Node).
 * It is compiled against the headers of the `node-api-headers` devDependency (pinned in
 * package-lock.json), not whatever /usr/include/node a machine may or may not have; the napi_*
 * symbols are left undefined and resolved from the host process when it loads the addon.
 *
 * It only reads the option: it never reads the socket, so the client's first bytes stay for the HTTP
 * server. A bad argument or a descriptor without peer credentials throws (the caller refuses the
 * connection: fail closed).
 */
#define _GNU_SOURCE
#define NAPI_VERSION 8
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <node_api.h>

static napi_value fail(napi_env env, const char *msg) {
  napi_throw_error(env, NULL, msg);
  return NULL;
}

static napi_value peer_credentials(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok) return fail(env, "peer-cred: cannot read the arguments");
  napi_valuetype type;
  if (argc < 1 || napi_typeof(env, argv[0], &type) != napi_ok || type != napi_number)
    return fail(env, "peer-cred: expected a file descriptor (a number)");
  int32_t fd;
  if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0)
    return fail(env, "peer-cred: expected a file descriptor (a number ≥ 0)");

  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred) {
    char msg[160];
    snprintf(msg, sizeof msg, "peer-cred: fd %d has no peer credentials: %s", (int)fd, len != sizeof cred ? "short answer" : strerror(errno));
    return fail(env, msg);
  }

  napi_value out, uid, pid;
  if (napi_create_object(env, &out) != napi_ok || napi_create_uint32(env, (uint32_t)cred.uid, &uid) != napi_ok ||
      napi_create_int32(env, (int32_t)cred.pid, &pid) != napi_ok || napi_set_named_property(env, out, "uid", uid) != napi_ok ||
      napi_set_named_property(env, out, "pid", pid) != napi_ok)
    return fail(env, "peer-cred: cannot build the answer");
  return out;
}

NAPI_MODULE_INIT(/* napi_env env, napi_value exports */) {
  napi_value fn;
  if (napi_create_function(env, "peerCredentials", NAPI_AUTO_LENGTH, peer_credentials, NULL, &fn) != napi_ok) return NULL;
  if (napi_set_named_property(env, exports, "peerCredentials", fn) != napi_ok) return NULL;
  return exports;
}
