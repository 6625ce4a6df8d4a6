/*
 * peer-cred: prints "<uid> <pid>\n" of the process at the other end of the Unix socket on fd 3.
 *
 * Hand-written in C because Node has no SO_PEERCRED (net.Socket exposes no getsockopt) and the service
 * must know who connected before it answers anything: the socket's mode 0600 is the first wall, the
 * peer's uid the second. The service spawns this once per accepted connection with the connection as
 * fd 3 (child_process stdio can share a net.Socket); it reads nothing and writes one line, so the cost
 * is one fork+exec (measured in test/integration/service.test.ts). Exit 2 with a reason on stderr when
 * fd 3 is not a Unix socket.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <sys/socket.h>

int main(void) {
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(3, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    fprintf(stderr, "peer-cred: fd 3 has no peer credentials: %s\n", strerror(errno));
    return 2;
  }
  printf("%u %d\n", (unsigned)cred.uid, (int)cred.pid);
  return 0;
}
