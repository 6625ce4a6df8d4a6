/*
 * A reference point for bench/network.ts, not part of the app: the bare forwarder of that benchmark
 * (one absolute-form HTTP request per connection, sent on in origin form, the bytes relayed both ways
 * until both sides have ended) written in C, to measure what a compiled data path costs per
 * connection on this machine beside what any Node proxy costs. Written by hand because the question
 * is exactly "this loop, compiled": a maintained compiled proxy (haproxy, squid) would measure its own
 * features, not the floor. Sequential (one connection at a time), as the benchmark's loop is; it
 * listens on 127.0.0.1 only, on a port the kernel picks (printed as `listening PORT`), and expects
 * the destination as a numeric IPv4 address (the benchmark's test server). Usage: forwarder
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char buf[1 << 16];

/* Writes all of len bytes; 0 when the peer is gone. */
static int write_all(int fd, const char *p, size_t len) {
  while (len) {
    ssize_t k = write(fd, p, len);
    if (k <= 0) return 0;
    p += k;
    len -= (size_t)k;
  }
  return 1;
}

/* One connection: the head is read in one go (the benchmark's client writes it in one). */
static void serve(int c) {
  ssize_t n = read(c, buf, sizeof buf - 1);
  if (n <= 0) return;
  buf[n] = 0;
  char *sp = strchr(buf, ' ');
  if (!sp || strncmp(sp, " http://", 8) != 0) return;
  char *host = sp + 8, *colon = strchr(host, ':');
  if (!colon) return;
  char *path = strchr(colon, '/');
  if (!path) return;
  *colon = 0;
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(colon + 1))};
  if (inet_pton(AF_INET, host, &to.sin_addr) != 1) return;
  int u = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(u, (struct sockaddr *)&to, sizeof to) != 0) {
    close(u);
    return;
  }
  /* The method, a space, then everything from the path on: the origin-form request. */
  if (!write_all(u, buf, (size_t)(sp - buf) + 1) || !write_all(u, path, (size_t)(buf + n - path))) {
    close(u);
    return;
  }
  struct pollfd f[2] = {{.fd = c, .events = POLLIN}, {.fd = u, .events = POLLIN}};
  int open = 2;
  while (open && poll(f, 2, -1) > 0) {
    for (int i = 0; i < 2; i++) {
      if (f[i].fd < 0 || !(f[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      int to_fd = i ? c : u;
      ssize_t k = read(f[i].fd, buf, sizeof buf);
      if (k <= 0 || !write_all(to_fd, buf, (size_t)k)) {
        shutdown(to_fd, SHUT_WR);
        f[i].fd = -1;
        open--;
      }
    }
  }
  close(u);
}

int main(int argc, char **argv) {
  (void)argv;
  if (argc != 1) return fprintf(stderr, "usage: forwarder\n"), 2;
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in at = {.sin_family = AF_INET, .sin_port = 0};
  socklen_t len = sizeof at;
  inet_pton(AF_INET, "127.0.0.1", &at.sin_addr);
  if (bind(ls, (struct sockaddr *)&at, sizeof at) != 0 || listen(ls, 64) != 0 || getsockname(ls, (struct sockaddr *)&at, &len) != 0)
    return perror("forwarder: listen"), 1;
  /* Ready: the benchmark waits for this line before its first request. */
  printf("listening %d\n", ntohs(at.sin_port));
  fflush(stdout);
  for (;;) {
    int c = accept(ls, NULL, NULL);
    if (c < 0) continue;
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    serve(c);
    close(c);
  }
}
