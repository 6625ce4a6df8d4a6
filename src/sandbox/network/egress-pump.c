/*
 * egress-pump: the egress proxy's data path (issue 17), compiled. It holds the sockets sandboxes
 * connect to, reads each connection's request head, asks the proxy in Node for a verdict (one line
 * each way over its stdin/stdout), and then dials and moves the bytes itself, with splice(2). Node
 * keeps every decision: the policy, DNS, the Host check, the log; nothing here knows a rule.
 *
 * Why by hand, in C: the decision is the whole job and it is the app's own (a maintained proxy such as
 * haproxy or squid would need the policy, the log and the process lookup re-expressed in its
 * configuration, reloaded on every change), and each connection handled in Node cost ~1.4 ms of CPU
 * on this project's 2-core machines — a small request through the proxy took 1.5x as long as without
 * it (docs/network-policy.md, runs 1-15). Here a connection costs a few dozen syscalls.
 *
 * What it holds, per sandbox (Node's `serve KEY PROXY_SOCK RELAY_SOCK`):
 *  - proxy.sock: connections as they are (QEMU's guestfwd, tests);
 *  - relay.sock: the links of a docker sandbox's relay (egress-relay-script.ts), each passing the
 *    listening TCP socket of the sandbox's proxy address, made in the sandbox's network namespace. The
 *    pump accepts the sandbox's connections on it itself: no process between. When a link ends the
 *    pump closes that listener (the relay closes its copy: the address refuses, fails closed). When the
 *    pump dies, all of it goes with it.
 * And which process in the sandbox opened each connection, looked up as the connection is accepted,
 * while its client surely holds it: the socket's inode by its exact 4-tuple with NETLINK_SOCK_DIAG
 * in the sandbox's network namespace (taken from the relay's listener, SIOCGSKNS; one netlink socket
 * made there with setns and kept), the process holding it among the sandbox's (the last holder
 * first, then its container's cgroup, then every process in that namespace), and that process's name,
 * command line, pid as the sandbox sees it and its ancestry. Only where the pump may (root: setns,
 * other users' /proc); otherwise no process is known, and the log says so.
 *
 * Protocol (lines; binary fields in hex; fields separated by one space):
 *  Node -> pump: serve KEY PROXY_SOCK RELAY_SOCK|-      listen for a sandbox (answers served / unserved)
 *                unserve KEY                           stop: sockets removed, relay links closed
 *                dial ID PORT TIMEOUT_MS http|connect SNI_HOST|- ADDR[,ADDR...] DISPLAY_HEX PREFIX_HEX|- LOGGED(0|1)
 *                logged ID                             the connection is on the log: its answer may go
 *                refuse ID RESPONSE_HEX                answer, close once the client has finished
 *                cut ID                                close now (after an `sni`, once it is logged)
 *                lookup KEY SRC SPORT DST DPORT        (tests) the process behind a 4-tuple: found ...
 *  pump -> Node: ready
 *                served KEY | unserved KEY WHY_HEX
 *                conn ID KEY +|- HEAD_HEX              a request head; + : its process follows (proc)
 *                proc ID PROC                          PROC is - or HOSTPID,NSPID,ANCESTRY(a.b.c|-),COMM_HEX,CMDLINE_HEX
 *                sni ID KEY HOST PORT PROC SNI_HEX     a TLS ClientHello named another host: Node logs, cuts
 *                found PROC
 *                say TEXT                              for the proxy's log (proxy.log)
 * A connection whose head is too large is answered 431 here; everything else about HTTP is Node's.
 * The pump exits when its stdin ends (the proxy is gone), and dies with its parent (PR_SET_PDEATHSIG).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEAD (64 * 1024)
#define CHUNK (1 << 20)
#define HEAD_TIMEOUT_MS 60000
#define VERDICT_TIMEOUT_MS 30000
#define CLOSING_TIMEOUT_MS 5000
/* A TLS record is at most 2^14 bytes of plaintext (+ 2048 of expansion) after its 5-byte header. */
#define MAX_HELLO (5 + 16384 + 2048)
#define MAX_PROCS 2048
#define MAX_FDS 4096
#define HASH 4096
#define PIPE_POOL 64

enum { T_CTL_IN, T_CTL_OUT, T_PROXY_LS, T_RELAY_LS, T_LINK, T_TCP_LS, T_CLIENT, T_UPSTREAM };
struct tag {
  int type;
  void *p;
};

/* ---------------------------------------------------------------------------------------------- */
/* small helpers                                                                                    */

static int ep;

static int64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) abort();
  return p;
}

static void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) abort();
  return p;
}

static char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}

static const char HEX[] = "0123456789abcdef";

static int unhex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes hex into a new buffer (*len bytes); NULL on a bad digit. "-" is empty. */
static char *unhex(const char *s, size_t *len) {
  if (strcmp(s, "-") == 0) s = "";
  size_t n = strlen(s);
  if (n % 2) return NULL;
  char *out = xmalloc(n / 2 + 1);
  for (size_t i = 0; i < n / 2; i++) {
    int hi = unhex_digit(s[2 * i]), lo = unhex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      free(out);
      return NULL;
    }
    out[i] = (char)(hi << 4 | lo);
  }
  out[n / 2] = 0;
  *len = n / 2;
  return out;
}

static int epoll_add(int fd, struct tag *t, uint32_t events) {
  struct epoll_event e = {.events = events, .data.ptr = t};
  return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
}

/*
 * Closed sandboxes, links and connections are freed only after the batch of events being handled:
 * a later event of the same batch may still point at them (it then finds them dead and does nothing).
 */
static void **grave;
static size_t ngrave, capgrave;

static void bury(void *p) {
  if (ngrave == capgrave) grave = xrealloc(grave, (capgrave = capgrave * 2 + 16) * sizeof *grave);
  grave[ngrave++] = p;
}

/* A listener passed by a relay is shared with it: closing our descriptor alone would leave it in epoll. */
static void close_shared(int fd) {
  epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
  close(fd);
}

/* ---------------------------------------------------------------------------------------------- */
/* the channel to Node                                                                              */

static struct {
  char *buf;
  size_t len, off, cap;
  int waiting; /* registered for EPOLLOUT */
} out;
static struct tag ctl_out_tag = {T_CTL_OUT, NULL};

static void out_reserve(size_t more) {
  if (out.len + more <= out.cap) return;
  if (out.off > 0) {
    memmove(out.buf, out.buf + out.off, out.len - out.off);
    out.len -= out.off;
    out.off = 0;
    if (out.len + more <= out.cap) return;
  }
  while (out.len + more > out.cap) out.cap = out.cap ? out.cap * 2 : 65536;
  out.buf = xrealloc(out.buf, out.cap);
}

static void out_bytes(const char *p, size_t n) {
  out_reserve(n);
  memcpy(out.buf + out.len, p, n);
  out.len += n;
}

static void out_str(const char *s) { out_bytes(s, strlen(s)); }

static void out_hex(const char *p, size_t n) {
  out_reserve(2 * n);
  char *o = out.buf + out.len;
  for (size_t i = 0; i < n; i++) {
    o[2 * i] = HEX[(unsigned char)p[i] >> 4];
    o[2 * i + 1] = HEX[(unsigned char)p[i] & 15];
  }
  out.len += 2 * n;
}

/* Short lines only (numbers, names): a field that may be long goes through out_str or out_hex. */
static void out_fmt(const char *fmt, ...) {
  char tmp[1024];
  va_list a;
  va_start(a, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, a);
  va_end(a);
  if (n > 0) out_bytes(tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Writes what it can now; the rest when stdout is writable again. Node gone: nothing to serve. */
static void out_flush(void) {
  while (out.off < out.len) {
    ssize_t k = write(1, out.buf + out.off, out.len - out.off);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) {
      if (!out.waiting) {
        struct epoll_event e = {.events = EPOLLOUT, .data.ptr = &ctl_out_tag};
        epoll_ctl(ep, EPOLL_CTL_ADD, 1, &e);
        out.waiting = 1;
      }
      return;
    }
    if (k <= 0) _exit(0);
    out.off += (size_t)k;
  }
  out.off = out.len = 0;
  if (out.waiting) {
    epoll_ctl(ep, EPOLL_CTL_DEL, 1, NULL);
    out.waiting = 0;
  }
}

static void say(const char *fmt, ...) {
  char tmp[900];
  va_list a;
  va_start(a, fmt);
  vsnprintf(tmp, sizeof tmp, fmt, a);
  va_end(a);
  for (char *p = tmp; *p; p++)
    if (*p == '\n') *p = ' ';
  out_str("say ");
  out_str(tmp);
  out_str("\n");
}

/* ---------------------------------------------------------------------------------------------- */
/* sandboxes, their listeners and relay links                                                        */

struct link;
struct sandbox {
  int key;
  char proxy_path[108], relay_path[108];
  struct tag proxy_tag, relay_tag;
  int proxy_ls, relay_ls;
  struct link *links;
  /* the process lookup: a sock_diag socket in the sandbox's network namespace (from its relay's listener) */
  int diag_fd, told;
  unsigned long netns_ino;
  char netns[48];  /* "net:[inode]", as /proc/<pid>/ns/net reads */
  char procs[256]; /* the container's cgroup.procs, learned from a holder; "" until then */
  int last_holder, last_fd;
  int dead;
  struct sandbox *next;
};
struct link {
  struct tag tag, ls_tag;
  struct sandbox *sb;
  int fd, ls, dead;
  struct link *next;
};
static struct sandbox *sandboxes;
static int home_ns = -1;

static struct sandbox *sandbox_of(int key) {
  for (struct sandbox *s = sandboxes; s; s = s->next)
    if (s->key == key) return s;
  return NULL;
}

static void link_close(struct link *l) {
  struct link **pp = &l->sb->links;
  while (*pp && *pp != l) pp = &(*pp)->next;
  if (*pp) *pp = l->next;
  if (l->ls >= 0) close_shared(l->ls);
  close(l->fd);
  l->dead = 1;
  bury(l);
}

/* A Unix socket the relay (root of its own container, not of this machine) or QEMU may connect to. */
static int unix_listen(const char *path, struct tag *t) {
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  if (strlen(path) >= sizeof a.sun_path) return errno = ENAMETOOLONG, -1;
  strcpy(a.sun_path, path);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  unlink(path);
  if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || chmod(path, 0666) != 0 || listen(fd, 512) != 0 ||
      epoll_add(fd, t, EPOLLIN | EPOLLET) != 0) {
    int e = errno;
    close(fd);
    unlink(path);
    return errno = e, -1;
  }
  return fd;
}

static void sandbox_free(struct sandbox *s) {
  while (s->links) link_close(s->links);
  if (s->proxy_ls >= 0) close(s->proxy_ls), unlink(s->proxy_path);
  if (s->relay_ls >= 0) close(s->relay_ls), unlink(s->relay_path);
  if (s->diag_fd >= 0) close(s->diag_fd);
  struct sandbox **pp = &sandboxes;
  while (*pp && *pp != s) pp = &(*pp)->next;
  if (*pp) *pp = s->next;
  s->dead = 1;
  bury(s);
}

static void cmd_serve(int key, const char *proxy_path, const char *relay_path) {
  struct sandbox *old = sandbox_of(key);
  if (old) sandbox_free(old);
  struct sandbox *s = calloc(1, sizeof *s);
  if (!s) abort();
  s->key = key;
  s->proxy_ls = s->relay_ls = s->diag_fd = -1;
  s->proxy_tag = (struct tag){T_PROXY_LS, s};
  s->relay_tag = (struct tag){T_RELAY_LS, s};
  snprintf(s->proxy_path, sizeof s->proxy_path, "%s", proxy_path);
  snprintf(s->relay_path, sizeof s->relay_path, "%s", strcmp(relay_path, "-") ? relay_path : "");
  s->next = sandboxes;
  sandboxes = s;
  /* The relay's socket first: once proxy.sock exists, the daemon's supervisor counts the sandbox as served. */
  if ((s->relay_path[0] && (s->relay_ls = unix_listen(s->relay_path, &s->relay_tag)) < 0) ||
      (s->proxy_ls = unix_listen(s->proxy_path, &s->proxy_tag)) < 0) {
    char why[300];
    snprintf(why, sizeof why, "cannot listen on %s: %s", s->relay_ls < 0 && s->relay_path[0] ? s->relay_path : s->proxy_path,
             strerror(errno));
    sandbox_free(s);
    out_fmt("unserved %d ", key);
    out_hex(why, strlen(why));
    out_str("\n");
    return;
  }
  out_fmt("served %d\n", key);
}

static void learn_netns(struct sandbox *s, int listener);

/* A relay link passed something: only a listening IPv4 TCP socket is taken (the relay runs in the sandbox's namespace). */
static void link_read(struct link *l) {
  for (;;) {
    char data[64];
    union {
      char buf[CMSG_SPACE(16 * sizeof(int))];
      struct cmsghdr align;
    } u;
    struct iovec iov = {data, sizeof data};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf};
    ssize_t n = recvmsg(l->fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      int count = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
      for (int i = 0; i < count; i++) {
        int fd;
        memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        int acc = 0, dom = 0, type = 0;
        socklen_t sl = sizeof(int);
        int ok = getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &sl) == 0 && acc == 1;
        sl = sizeof(int);
        ok = ok && getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &sl) == 0 && dom == AF_INET;
        sl = sizeof(int);
        ok = ok && getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &sl) == 0 && type == SOCK_STREAM;
        if (!ok || fcntl(fd, F_SETFL, O_NONBLOCK) != 0) {
          close(fd);
          continue;
        }
        if (l->ls >= 0) close_shared(l->ls);
        l->ls = fd;
        l->ls_tag = (struct tag){T_TCP_LS, l};
        epoll_add(fd, &l->ls_tag, EPOLLIN | EPOLLET);
        learn_netns(l->sb, fd);
      }
    }
    if (n <= 0) {
      /* The link is gone: so is the listener it passed (the relay closes its copy: refused, fails closed). */
      link_close(l);
      return;
    }
  }
}

/* ---------------------------------------------------------------------------------------------- */
/* which process in the sandbox holds a socket                                                        */

static ssize_t read_file(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t n = 0;
  while (n < cap - 1) {
    ssize_t k = read(fd, buf + n, cap - 1 - n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) break;
    n += (size_t)k;
  }
  close(fd);
  buf[n] = 0;
  return (ssize_t)n;
}

/* One read: a small /proc file (status, cmdline's first KiB) comes whole in one, and every syscall counts here. */
static ssize_t read_once(const char *path, char *buf, size_t cap) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, cap - 1);
  close(fd);
  buf[n > 0 ? n : 0] = 0;
  return n;
}

static int link_of(const char *path, char *buf, size_t cap) {
  ssize_t n = readlink(path, buf, cap - 1);
  if (n < 0) return -1;
  buf[n] = 0;
  return 0;
}

/*
 * The sandbox's network namespace, from a listener its relay passed (made there): the sock_diag
 * socket is made in it once (a netlink socket stays in the namespace it was made in) and kept while
 * the namespace is the same; a new one (the container restarted) starts the lookup afresh.
 */
static void learn_netns(struct sandbox *s, int listener) {
  int nsfd = ioctl(listener, SIOCGSKNS);
  if (nsfd < 0) {
    if (!s->told) say("sandbox %d: no process lookup (the namespace of its listener: %s)", s->key, strerror(errno));
    s->told = 1;
    return;
  }
  struct stat st;
  if (fstat(nsfd, &st) != 0 || (st.st_ino == s->netns_ino && s->diag_fd >= 0)) {
    close(nsfd);
    return;
  }
  if (s->diag_fd >= 0) close(s->diag_fd);
  s->diag_fd = -1;
  s->netns_ino = st.st_ino;
  snprintf(s->netns, sizeof s->netns, "net:[%lu]", (unsigned long)st.st_ino);
  s->procs[0] = 0;
  s->last_holder = 0;
  s->last_fd = -1;
  if (setns(nsfd, CLONE_NEWNET) != 0) {
    if (!s->told) say("sandbox %d: no process lookup (cannot enter its network namespace: %s)", s->key, strerror(errno));
    s->told = 1;
    close(nsfd);
    return;
  }
  s->diag_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  /* Back home at once; a pump left in a sandbox's namespace would dial from there: stop instead. */
  if (setns(home_ns, CLONE_NEWNET) != 0) _exit(3);
  close(nsfd);
  if (s->diag_fd >= 0) {
    struct timeval tv = {0, 200000};
    setsockopt(s->diag_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
}

/* The cgroup.procs of host pid `pid`'s cgroup (v2, or v1's pids / systemd hierarchy) into `out`; "" when not found. */
static void procs_of(int pid, char *out, size_t cap) {
  char path[64], cg[4096], *save = NULL;
  out[0] = 0;
  snprintf(path, sizeof path, "/proc/%d/cgroup", pid);
  if (read_file(path, cg, sizeof cg) <= 0) return;
  for (char *line = strtok_r(cg, "\n", &save); line && !out[0]; line = strtok_r(NULL, "\n", &save)) {
    char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    if (!c2 || c2[1] != '/') continue;
    *c2 = 0;
    const char *ctl = c1 + 1, *p = c2 + 1, *base = NULL;
    if (!*ctl) base = "/sys/fs/cgroup";
    else if (strstr(ctl, "pids")) base = "/sys/fs/cgroup/pids";
    else if (!strcmp(ctl, "name=systemd")) base = "/sys/fs/cgroup/systemd";
    if (!base) continue;
    snprintf(out, cap, "%s%s/cgroup.procs", base, strcmp(p, "/") ? p : "");
    if (access(out, R_OK) != 0) out[0] = 0;
  }
}

/* The inode of the TCP socket whose own end is `src` and whose peer is `dst`, in the sandbox's namespace; 0: none. */
static unsigned socket_inode(struct sandbox *s, const struct sockaddr_in *src, const struct sockaddr_in *dst) {
  if (!s || s->diag_fd < 0) return 0;
  struct {
    struct nlmsghdr h;
    struct inet_diag_req_v2 r;
  } req = {
      .h = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1},
      .r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u},
  };
  /* An exact lookup (no NLM_F_DUMP): the kernel finds the one socket in its hash. */
  req.r.id.idiag_sport = src->sin_port;
  req.r.id.idiag_dport = dst->sin_port;
  memcpy(req.r.id.idiag_src, &src->sin_addr, 4);
  memcpy(req.r.id.idiag_dst, &dst->sin_addr, 4);
  req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (send(s->diag_fd, &req, sizeof req, 0) != (ssize_t)sizeof req) return 0;
  union {
    char b[8192];
    struct nlmsghdr align;
  } ans;
  ssize_t n = recv(s->diag_fd, ans.b, sizeof ans.b, 0);
  for (struct nlmsghdr *h = &ans.align; n > 0 && NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
      return ((struct inet_diag_msg *)NLMSG_DATA(h))->idiag_inode;
    if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE) break;
  }
  return 0;
}

/* The descriptor number by which host pid `p`, a process in the sandbox's network namespace, holds socket:[inode] (`want`); -1: none. */
static int holds(struct sandbox *s, int p, const char *want) {
  char path[64], l[128];
  snprintf(path, sizeof path, "/proc/%d/ns/net", p);
  if (link_of(path, l, sizeof l) != 0 || strcmp(l, s->netns) != 0) return -1;
  snprintf(path, sizeof path, "/proc/%d/fd", p);
  DIR *d = opendir(path);
  if (!d) return -1;
  int dfd = dirfd(d), found = -1, seen = 0;
  for (struct dirent *e; found < 0 && seen < MAX_FDS && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    seen++;
    ssize_t k = readlinkat(dfd, e->d_name, l, sizeof l - 1);
    if (k > 0 && (l[k] = 0, strcmp(l, want) == 0)) found = atoi(e->d_name);
  }
  closedir(d);
  return found;
}

/* A field of /proc/<pid>/status, looked for after a newline: the first line (Name) is the process's own to choose. */
static int status_field(const char *status, const char *name) {
  const char *p = strstr(status, name);
  if (!p) return -1;
  p += strlen(name);
  /* NSpid lists the pid in each namespace, outermost first: the sandbox's view is the last. */
  int v = -1;
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    if (*p < '0' || *p > '9') break;
    v = (int)strtol(p, (char **)&p, 10);
  }
  return v;
}

/*
 * The host pid holding socket:[inode] among the sandbox's processes, 0: none. The last holder first,
 * at the descriptor number it used last (a client that connects often — a browser, a loop — is
 * usually the next one's too, and reuses its number: one readlink instead of a walk); then all of its
 * descriptors; then the container's own processes (its cgroup's list, learned from a holder found
 * before); then every process of this machine, those in the sandbox's network namespace looked into
 * (so the first connection of a sandbox needs nothing from the engine). A socket's inode names one
 * socket on the whole machine: whoever has a descriptor for it holds it.
 */
static int holder_of(struct sandbox *s, const char *want) {
  if (s->last_holder > 0 && s->last_fd >= 0) {
    char path[64], l[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", s->last_holder, s->last_fd);
    if (link_of(path, l, sizeof l) == 0 && strcmp(l, want) == 0) return s->last_holder;
  }
  int fd;
  if (s->last_holder > 0 && (fd = holds(s, s->last_holder, want)) >= 0) return s->last_fd = fd, s->last_holder;
  static char list[MAX_PROCS * 12];
  if (s->procs[0] && read_file(s->procs, list, sizeof list) > 0) {
    char *save = NULL;
    int n = 0;
    for (char *t = strtok_r(list, "\n", &save); t && n < MAX_PROCS; t = strtok_r(NULL, "\n", &save), n++)
      if (atoi(t) != s->last_holder && (fd = holds(s, atoi(t), want)) >= 0) return s->last_fd = fd, atoi(t);
  }
  DIR *d = opendir("/proc");
  int holder = 0, n = 0;
  for (struct dirent *e; d && !holder && n < 8 * MAX_PROCS && (e = readdir(d)); n++)
    if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && (fd = holds(s, atoi(e->d_name), want)) >= 0) holder = atoi(e->d_name), s->last_fd = fd;
  if (d) closedir(d);
  if (holder) procs_of(holder, s->procs, sizeof s->procs);
  return holder;
}

/* The command line shown on the log is cut at 120 characters; this much is read (the exec wrapper's name is early). */
#define CMDLINE_READ 1024

/*
 * Fills `proc` with the process holding the socket `src` -> `dst` as the pump's protocol carries it
 * (see the top), or leaves it NULL: its name, command line, pid in its own pid namespace, and its
 * ancestors in that namespace (up to the container's init: its parent is outside). About twenty
 * syscalls for a client seen before: it runs while the proxy decides (see conn_head).
 */
static void lookup(struct sandbox *s, const struct sockaddr_in *src, const struct sockaddr_in *dst, char **proc) {
  *proc = NULL;
  unsigned inode = socket_inode(s, src, dst);
  if (!inode) return;
  char want[48];
  snprintf(want, sizeof want, "socket:[%u]", inode);
  int holder = holder_of(s, want);
  if (!holder) return;
  s->last_holder = holder;
  char path[64], status[4096], cmd[CMDLINE_READ + 1], pidns[128], nsl[128];
  snprintf(path, sizeof path, "/proc/%d/ns/pid", holder);
  if (link_of(path, pidns, sizeof pidns) != 0) return;
  snprintf(path, sizeof path, "/proc/%d/status", holder);
  if (read_once(path, status, sizeof status) <= 0 || strncmp(status, "Name:\t", 6) != 0) return;
  int nspid = status_field(status, "\nNSpid:"), ppid = status_field(status, "\nPPid:");
  /* The name (comm) is status's first line, as the kernel escapes it. */
  const char *comm = status + 6;
  size_t cn = strcspn(comm, "\n");
  snprintf(path, sizeof path, "/proc/%d/cmdline", holder);
  ssize_t mn = read_once(path, cmd, sizeof cmd);
  if (mn < 0) mn = 0;
  char anc[64 * 12] = "";
  size_t al = 0;
  for (int host = ppid, depth = 0; host > 0 && depth < 64 && al < sizeof anc - 12; depth++) {
    snprintf(path, sizeof path, "/proc/%d/ns/pid", host);
    if (link_of(path, nsl, sizeof nsl) != 0 || strcmp(nsl, pidns) != 0) break;
    char st[4096];
    snprintf(path, sizeof path, "/proc/%d/status", host);
    if (read_once(path, st, sizeof st) <= 0) break;
    int p = status_field(st, "\nNSpid:");
    if (p < 0) break;
    al += (size_t)snprintf(anc + al, sizeof anc - al, "%s%d", al ? "." : "", p);
    host = status_field(st, "\nPPid:");
  }
  if (nspid <= 0) return;
  size_t len = 64 + strlen(anc) + 2 * cn + 2 * (size_t)mn;
  char *p = xmalloc(len), *o = p + sprintf(p, "%d,%d,%s,", holder, nspid, al ? anc : "-");
  for (size_t i = 0; i < cn; i++) *o++ = HEX[(unsigned char)comm[i] >> 4], *o++ = HEX[(unsigned char)comm[i] & 15];
  *o++ = ',';
  for (ssize_t i = 0; i < mn; i++) *o++ = HEX[(unsigned char)cmd[i] >> 4], *o++ = HEX[(unsigned char)cmd[i] & 15];
  *o = 0;
  *proc = p;
}

/* ---------------------------------------------------------------------------------------------- */
/* connections                                                                                      */

/* S_CUT: a tunnel whose ClientHello named another host, waiting for Node to log it (then `cut`). */
enum { S_HEAD, S_VERDICT, S_DIAL, S_HELLO, S_CUT, S_RELAY, S_CLOSING, S_DEAD };

/* One direction: what is pending from us first, then the source's bytes through a pipe (splice). */
struct way {
  int *src, *dst;
  int pr, pw;
  size_t in_pipe;
  char *pend;
  size_t pend_len, pend_off;
  int eof, done, on, discard;
};

struct conn {
  struct tag tc, tu;
  uint64_t id;
  int key;
  int c, u;
  int state;
  char *buf; /* the head, then (CONNECT) the client's first bytes */
  size_t len, cap;
  char *proc;
  /* the 4-tuple for the process lookup (tcp: accepted on a relay's listener), done once the head is in */
  struct sockaddr_in peer, self;
  int lookup;
  /* Node has the connection on its log: only then does its answer go to the client */
  int logged;
  struct way up, down; /* up: client -> destination; down: destination -> client */
  /* the dial Node asked for */
  char **addrs;
  int naddr, ai, port, tls_check;
  char *host, *display;
  int64_t deadline, dial_deadline;
  struct conn *hnext, *prev, *next;
};

static struct conn *conns;
static struct conn *by_id[HASH];
static uint64_t next_id = 1;
static int pipes[PIPE_POOL][2], npipes;

static struct conn *conn_of(uint64_t id) {
  for (struct conn *c = by_id[id % HASH]; c; c = c->hnext)
    if (c->id == id) return c;
  return NULL;
}

static int pipe_get(struct way *w) {
  if (w->pr >= 0) return 0;
  int p[2];
  if (npipes > 0) {
    npipes--;
    p[0] = pipes[npipes][0], p[1] = pipes[npipes][1];
  } else {
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) return -1;
    fcntl(p[1], F_SETPIPE_SZ, CHUNK); /* best effort: the default 64 KiB works, only slower for bulk */
  }
  w->pr = p[0], w->pw = p[1];
  return 0;
}

static void way_free(struct way *w) {
  if (w->pr >= 0) {
    /* An empty pipe is as good as new: kept for the next connection. */
    if (w->in_pipe == 0 && npipes < PIPE_POOL) {
      pipes[npipes][0] = w->pr, pipes[npipes][1] = w->pw;
      npipes++;
    } else {
      close(w->pr);
      close(w->pw);
    }
  }
  free(w->pend);
  w->pr = w->pw = -1;
  w->pend = NULL;
}

static void conn_close(struct conn *c) {
  if (c->state == S_DEAD) return;
  c->state = S_DEAD;
  if (c->c >= 0) close(c->c);
  if (c->u >= 0) close(c->u);
  way_free(&c->up);
  way_free(&c->down);
  struct conn **pp = &by_id[c->id % HASH];
  while (*pp && *pp != c) pp = &(*pp)->hnext;
  if (*pp) *pp = c->hnext;
  if (c->prev) c->prev->next = c->next;
  else conns = c->next;
  if (c->next) c->next->prev = c->prev;
  for (int i = 0; i < c->naddr; i++) free(c->addrs[i]);
  free(c->addrs);
  free(c->buf);
  free(c->proc);
  free(c->host);
  free(c->display);
  bury(c);
}

static void way_pend(struct way *w, const char *p, size_t n) {
  if (!n) return;
  size_t left = w->pend_len - w->pend_off;
  char *b = xmalloc(left + n);
  if (left) memcpy(b, w->pend + w->pend_off, left);
  memcpy(b + left, p, n);
  free(w->pend);
  w->pend = b;
  w->pend_len = left + n;
  w->pend_off = 0;
}

/*
 * Moves what it can of one direction: our pending bytes, then the source's through the pipe. A
 * source's end passes on as a write shutdown (half-close: the other way stays open). -1: broken.
 */
static int way_pump(struct way *w) {
  if (!w->on || w->done) return 0;
  for (;;) {
    if (w->pend_off < w->pend_len) {
      ssize_t k = send(*w->dst, w->pend + w->pend_off, w->pend_len - w->pend_off, MSG_NOSIGNAL);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) return 0;
      if (k < 0) return -1;
      w->pend_off += (size_t)k;
      continue;
    }
    if (w->in_pipe) {
      ssize_t k = splice(w->pr, NULL, *w->dst, NULL, w->in_pipe, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) return 0;
      if (k <= 0) return -1;
      w->in_pipe -= (size_t)k;
      continue;
    }
    if (w->eof) {
      if (!w->discard && *w->dst >= 0) shutdown(*w->dst, SHUT_WR);
      w->done = 1;
      return 0;
    }
    if (w->discard) {
      char sink[4096];
      ssize_t k = recv(*w->src, sink, sizeof sink, 0);
      if (k < 0 && errno == EINTR) continue;
      if (k < 0 && errno == EAGAIN) return 0;
      if (k <= 0) w->eof = 1;
      continue;
    }
    if (pipe_get(w) != 0) return -1;
    ssize_t k = splice(*w->src, NULL, w->pw, NULL, CHUNK, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) return 0;
    if (k < 0) {
      if (errno == ECONNRESET) {
        w->eof = 1;
        continue;
      }
      return -1;
    }
    if (k == 0) w->eof = 1;
    else w->in_pipe += (size_t)k;
  }
}

static void conn_pump(struct conn *c) {
  if (way_pump(&c->up) < 0 || way_pump(&c->down) < 0) return conn_close(c);
  if (c->up.done && c->down.done) conn_close(c);
}

/* Answers the client with `resp` and closes once it has finished sending (a close with its bytes unread would reset the answer). */
static void conn_answer(struct conn *c, const char *resp, size_t n) {
  if (c->u >= 0) close(c->u), c->u = -1;
  way_free(&c->up);
  way_free(&c->down);
  c->state = S_CLOSING;
  c->deadline = now_ms() + CLOSING_TIMEOUT_MS;
  c->down = (struct way){.src = &c->u, .dst = &c->c, .pr = -1, .pw = -1, .on = 1, .eof = 1};
  way_pend(&c->down, resp, n);
  c->up = (struct way){.src = &c->c, .dst = &c->u, .pr = -1, .pw = -1, .on = 1, .discard = 1};
  conn_pump(c);
}

static void conn_answer_text(struct conn *c, int status, const char *reason, const char *body) {
  char r[1200];
  int n = snprintf(r, sizeof r,
                   "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s", status,
                   reason, strlen(body), body);
  conn_answer(c, r, (size_t)n < sizeof r ? (size_t)n : sizeof r - 1);
}

static void conn_head(struct conn *c);

static void conn_new(int fd, int key, struct sandbox *s, int tcp) {
  struct conn *c = calloc(1, sizeof *c);
  if (!c) abort();
  c->id = next_id++;
  c->key = key;
  c->c = fd;
  c->u = -1;
  c->tc = (struct tag){T_CLIENT, c};
  c->tu = (struct tag){T_UPSTREAM, c};
  c->up = (struct way){.src = &c->c, .dst = &c->u, .pr = -1, .pw = -1};
  c->down = (struct way){.src = &c->u, .dst = &c->c, .pr = -1, .pw = -1};
  c->state = S_HEAD;
  c->deadline = now_ms() + HEAD_TIMEOUT_MS;
  c->hnext = by_id[c->id % HASH];
  by_id[c->id % HASH] = c;
  c->next = conns;
  if (conns) conns->prev = c;
  conns = c;
  if (tcp) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    socklen_t pl = sizeof c->peer, sl = sizeof c->self;
    c->lookup = s && s->diag_fd >= 0 && getpeername(fd, (struct sockaddr *)&c->peer, &pl) == 0 &&
                getsockname(fd, (struct sockaddr *)&c->self, &sl) == 0 && c->peer.sin_family == AF_INET;
  }
  epoll_add(fd, &c->tc, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
  /* A client writes its head as soon as it has connected: usually it is here already (no wait for epoll). */
  conn_head(c);
}

static void accept_all(int ls, int key, struct sandbox *s, int tcp) {
  for (;;) {
    int fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return; /* EAGAIN; EMFILE and the like are retried by the sweep */
    }
    conn_new(fd, key, s, tcp);
  }
}

static void *memmem4(const char *h, size_t n) { return memmem(h, n, "\r\n\r\n", 4); }

/* Reads the request head; a complete one goes to Node with the connection's process. */
static void conn_head(struct conn *c) {
  for (;;) {
    if (c->cap - c->len < 4096) {
      c->cap = c->cap ? c->cap * 2 : 8192;
      if (c->cap > MAX_HEAD + 8192) c->cap = MAX_HEAD + 8192;
      c->buf = xrealloc(c->buf, c->cap);
    }
    if (c->len >= MAX_HEAD + 4096) break;
    ssize_t k = recv(c->c, c->buf + c->len, c->cap - c->len, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) break;
    if (k <= 0) return conn_close(c); /* gone before its head was complete */
    size_t from = c->len > 3 ? c->len - 3 : 0;
    c->len += (size_t)k;
    if (memmem4(c->buf + from, c->len - from)) break;
  }
  char *end = memmem4(c->buf, c->len);
  if (!end) {
    if (c->len > MAX_HEAD) conn_answer_text(c, 431, "Request Header Fields Too Large", "the request head is too large\n");
    return;
  }
  size_t head = (size_t)(end - c->buf);
  if (head > MAX_HEAD) return conn_answer_text(c, 431, "Request Header Fields Too Large", "the request head is too large\n");
  c->state = S_VERDICT;
  c->deadline = now_ms() + VERDICT_TIMEOUT_MS;
  out_fmt("conn %llu %d %c ", (unsigned long long)c->id, c->key, c->lookup ? '+' : '-');
  out_hex(c->buf, head);
  out_str("\n");
  if (c->lookup) {
    /*
     * The process lookup runs while Node decides (the head is on its way first; measured: a request's
     * answer came ~0.2 ms sooner than with the two one after the other), and the client still holds
     * its socket: nothing has answered it yet. Its line follows; Node logs the connection with it, and
     * only then is the answer let through (`logged`).
     */
    out_flush();
    struct sandbox *s = sandbox_of(c->key);
    if (s && s->diag_fd >= 0) lookup(s, &c->peer, &c->self, &c->proc);
    out_fmt("proc %llu ", (unsigned long long)c->id);
    out_str(c->proc ? c->proc : "-");
    out_str("\n");
  }
  /* What came after the head stays in buf: the request's body, or a tunnel's first bytes. */
  c->len -= head + 4;
  memmove(c->buf, end + 4, c->len);
}

static void dial_next(struct conn *c);

static void dial_failed(struct conn *c, int err) {
  if (c->ai + 1 < c->naddr) {
    c->ai++;
    return dial_next(c);
  }
  char body[600];
  snprintf(body, sizeof body, "could not reach %s: %s\n", c->display, err == ETIMEDOUT ? "connect timeout" : strerror(err));
  conn_answer_text(c, 502, "Bad Gateway", body);
}

static void dial_next(struct conn *c) {
  if (c->u >= 0) close(c->u), c->u = -1;
  union {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
  } a = {0};
  socklen_t al;
  const char *addr = c->addrs[c->ai];
  if (inet_pton(AF_INET, addr, &a.in4.sin_addr) == 1) {
    a.in4.sin_family = AF_INET;
    a.in4.sin_port = htons((uint16_t)c->port);
    al = sizeof a.in4;
  } else if (inet_pton(AF_INET6, addr, &a.in6.sin6_addr) == 1) {
    a.in6.sin6_family = AF_INET6;
    a.in6.sin6_port = htons((uint16_t)c->port);
    al = sizeof a.in6;
  } else
    return dial_failed(c, EINVAL);
  c->u = socket(a.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (c->u < 0) return dial_failed(c, errno);
  int one = 1;
  setsockopt(c->u, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  c->state = S_DIAL;
  if (connect(c->u, &a.sa, al) != 0 && errno != EINPROGRESS) return dial_failed(c, errno);
  epoll_add(c->u, &c->tu, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET);
}

/* The length of the server_name in a complete ClientHello record (at `*name`), 0 for none. */
static size_t sni_of(const unsigned char *b, size_t n, const unsigned char **name) {
  if (n < 5 + 4 + 2 + 32 + 1 || b[0] != 0x16 || b[5] != 0x01) return 0;
  size_t p = 5 + 4 + 2 + 32;
  p += 1 + b[p]; /* session id */
  if (p + 2 > n) return 0;
  p += 2 + ((size_t)b[p] << 8 | b[p + 1]); /* cipher suites */
  if (p + 1 > n) return 0;
  p += 1 + b[p]; /* compression methods */
  if (p + 2 > n) return 0;
  size_t end = p + 2 + ((size_t)b[p] << 8 | b[p + 1]);
  for (p += 2; p + 4 <= end && p + 4 <= n;) {
    size_t type = (size_t)b[p] << 8 | b[p + 1], len = (size_t)b[p + 2] << 8 | b[p + 3];
    p += 4;
    if (type == 0) {
      /* server_name list: length(2), then entries of type(1) = 0 (host_name), length(2), name */
      for (size_t q = p + 2; q + 3 <= p + len && q + 3 <= n;) {
        size_t nl = (size_t)b[q + 1] << 8 | b[q + 2];
        if (q + 3 + nl > n) return 0;
        if (b[q] == 0) return *name = b + q + 3, nl;
        q += 3 + nl;
      }
      return 0;
    }
    p += len;
  }
  return 0;
}

/*
 * CONNECT: the client's first bytes, before any reach the destination. A TLS ClientHello must name
 * the host CONNECT named (no domain fronting): its whole first record is read, then checked.
 */
static void conn_hello(struct conn *c) {
  int eof = 0;
  for (;;) {
    size_t need = 1;
    if (c->len >= 1 && (unsigned char)c->buf[0] != 0x16) break;
    if (c->len >= 5) need = 5 + ((size_t)(unsigned char)c->buf[3] << 8 | (unsigned char)c->buf[4]);
    else if (c->len >= 1) need = 5;
    if (need > MAX_HELLO) need = MAX_HELLO;
    if (c->len >= need) break;
    if (c->cap < need) c->buf = xrealloc(c->buf, c->cap = need);
    ssize_t k = recv(c->c, c->buf + c->len, need - c->len, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) return;
    if (k <= 0) {
      eof = 1;
      break;
    }
    c->len += (size_t)k;
  }
  const unsigned char *name = NULL;
  size_t nl = c->tls_check ? sni_of((const unsigned char *)c->buf, c->len, &name) : 0;
  if (nl && (nl != strlen(c->host) || strncasecmp((const char *)name, c->host, nl) != 0)) {
    out_fmt("sni %llu %d ", (unsigned long long)c->id, c->key);
    out_str(c->host);
    out_fmt(" %d ", c->port);
    out_str(c->proc ? c->proc : "-");
    out_str(" ");
    out_hex((const char *)name, nl);
    out_str("\n");
    /* Cut off once Node has the denial on the log (its `cut`): a client that looks right after finds it. */
    c->state = S_CUT;
    c->deadline = now_ms() + VERDICT_TIMEOUT_MS;
    return;
  }
  way_pend(&c->up, c->buf, c->len);
  c->len = 0;
  c->up.on = 1;
  c->up.eof = eof;
  c->state = S_RELAY;
  conn_pump(c);
}

static void dial_done(struct conn *c) {
  int err = 0;
  socklen_t el = sizeof err;
  if (getsockopt(c->u, SOL_SOCKET, SO_ERROR, &err, &el) != 0) err = errno;
  if (err == EINPROGRESS || err == EALREADY) return;
  if (err) return dial_failed(c, err);
  c->down.on = c->logged;
  if (c->host) {
    /* CONNECT: established; the destination's bytes flow at once (server-first protocols), the client's after the check. */
    static const char ok[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
    way_pend(&c->down, ok, sizeof ok - 1);
    c->state = S_HELLO;
    conn_pump(c);
    if (c->state != S_DEAD) conn_hello(c);
    return;
  }
  c->up.on = 1;
  c->state = S_RELAY;
  conn_pump(c);
}

/* ---------------------------------------------------------------------------------------------- */
/* Node's commands                                                                                  */

static void cmd_dial(char **f, int n) {
  /* dial ID PORT TIMEOUT_MS http|connect SNI_HOST|- ADDRS DISPLAY_HEX PREFIX_HEX|- LOGGED */
  if (n != 10) return say("bad dial command (%d fields)", n);
  struct conn *c = conn_of(strtoull(f[1], NULL, 10));
  if (!c || c->state != S_VERDICT) return;
  size_t dl = 0, pl = 0;
  char *display = unhex(f[7], &dl), *prefix = unhex(f[8], &pl);
  if (!display || !prefix) {
    free(display);
    free(prefix);
    return say("bad dial command (hex)");
  }
  c->display = display;
  c->logged = c->logged || !strcmp(f[9], "1");
  c->port = atoi(f[2]);
  c->dial_deadline = now_ms() + atoi(f[3]);
  c->deadline = c->dial_deadline;
  if (!strcmp(f[4], "connect")) {
    c->host = xstrdup(strcmp(f[5], "-") ? f[5] : "");
    c->tls_check = strcmp(f[5], "-") != 0;
  } else {
    /* Plain HTTP: Node's head (origin form, Connection: close), then whatever followed the client's. */
    way_pend(&c->up, prefix, pl);
    way_pend(&c->up, c->buf, c->len);
    c->len = 0;
  }
  free(prefix);
  char *save = NULL;
  for (char *a = strtok_r(f[6], ",", &save); a; a = strtok_r(NULL, ",", &save)) {
    c->addrs = xrealloc(c->addrs, (size_t)(c->naddr + 1) * sizeof *c->addrs);
    c->addrs[c->naddr++] = xstrdup(a);
  }
  if (!c->naddr) return conn_answer_text(c, 502, "Bad Gateway", "no address to dial\n");
  dial_next(c);
}

/* Node has the connection on its log: its answer may go to the client now. */
static void cmd_logged(char **f, int n) {
  struct conn *c = n == 2 ? conn_of(strtoull(f[1], NULL, 10)) : NULL;
  if (!c || c->logged) return;
  c->logged = 1;
  if (c->state != S_HELLO && c->state != S_RELAY) return;
  c->down.on = 1;
  conn_pump(c);
  if (c->state == S_HELLO) conn_hello(c);
}

static void cmd_refuse(char **f, int n) {
  if (n != 3) return say("bad refuse command");
  struct conn *c = conn_of(strtoull(f[1], NULL, 10));
  if (!c || c->state != S_VERDICT) return;
  size_t len = 0;
  char *r = unhex(f[2], &len);
  if (!r) return say("bad refuse command (hex)");
  conn_answer(c, r, len);
  free(r);
}

static void cmd_lookup(char **f, int n) {
  struct sandbox *s = n == 6 ? sandbox_of(atoi(f[1])) : NULL;
  struct sockaddr_in src = {.sin_family = AF_INET}, dst = {.sin_family = AF_INET};
  char *proc = NULL;
  if (s && inet_pton(AF_INET, f[2], &src.sin_addr) == 1 && inet_pton(AF_INET, f[4], &dst.sin_addr) == 1) {
    src.sin_port = htons((uint16_t)atoi(f[3]));
    dst.sin_port = htons((uint16_t)atoi(f[5]));
    lookup(s, &src, &dst, &proc);
  }
  out_str("found ");
  out_str(proc ? proc : "-");
  out_str("\n");
  free(proc);
}

static void command(char *line) {
  char *f[12];
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(line, " ", &save); t && n < 12; t = strtok_r(NULL, " ", &save)) f[n++] = t;
  if (n == 0) return;
  if (!strcmp(f[0], "dial")) cmd_dial(f, n);
  else if (!strcmp(f[0], "refuse")) cmd_refuse(f, n);
  else if (!strcmp(f[0], "logged")) cmd_logged(f, n);
  else if (!strcmp(f[0], "cut") && n == 2) {
    struct conn *c = conn_of(strtoull(f[1], NULL, 10));
    if (c) conn_close(c);
  }
  else if (!strcmp(f[0], "serve") && n == 4) cmd_serve(atoi(f[1]), f[2], f[3]);
  else if (!strcmp(f[0], "unserve") && n == 2) {
    struct sandbox *s = sandbox_of(atoi(f[1]));
    if (s) sandbox_free(s);
  }
  else if (!strcmp(f[0], "lookup")) cmd_lookup(f, n);
  else say("unknown command %s", f[0]);
}

static struct {
  char *buf;
  size_t len, cap;
} in;

/* One read per wake-up: stdin is watched level-triggered, so what is left is reported again. */
static void ctl_read(void) {
  if (in.cap - in.len < 65536) in.buf = xrealloc(in.buf, in.cap = in.cap * 2 + 65536);
  ssize_t k = read(0, in.buf + in.len, in.cap - in.len);
  if (k < 0 && (errno == EINTR || errno == EAGAIN)) return;
  if (k <= 0) _exit(0); /* the proxy is gone: so is every way out (fails closed) */
  in.len += (size_t)k;
  size_t start = 0;
  for (char *nl; (nl = memchr(in.buf + start, '\n', in.len - start));) {
    *nl = 0;
    command(in.buf + start);
    start = (size_t)(nl - in.buf) + 1;
  }
  memmove(in.buf, in.buf + start, in.len - start);
  in.len -= start;
}

/* ---------------------------------------------------------------------------------------------- */

static void on_conn_event(struct conn *c, int upstream) {
  switch (c->state) {
  case S_DEAD:
    return;
  case S_HEAD:
    if (!upstream) conn_head(c);
    return;
  case S_VERDICT:
  case S_CUT:
    return; /* nothing is read until Node has decided */
  case S_DIAL:
    if (upstream) dial_done(c);
    return;
  case S_HELLO:
    conn_pump(c);
    if (c->state != S_DEAD && !upstream) conn_hello(c);
    return;
  default:
    conn_pump(c);
  }
}

/* Once a second: what has waited too long ends, and listeners that could not accept (EMFILE) try again. */
static void sweep(void) {
  int64_t t = now_ms();
  for (struct conn *c = conns, *next; c; c = next) {
    next = c->next;
    if (c->state == S_RELAY || c->state == S_HELLO || c->deadline > t) continue;
    if (c->state == S_DIAL) dial_failed(c, ETIMEDOUT);
    else if (c->state == S_VERDICT) conn_answer_text(c, 504, "Gateway Timeout", "the egress proxy did not decide in time\n");
    else conn_close(c);
  }
  for (struct sandbox *s = sandboxes; s; s = s->next) {
    if (s->proxy_ls >= 0) accept_all(s->proxy_ls, s->key, NULL, 0);
    for (struct link *l = s->links; l; l = l->next)
      if (l->ls >= 0) accept_all(l->ls, s->key, s, 1);
  }
}

int main(void) {
  /* Nothing of the proxy's but the channel: a descriptor inherited by accident would be held open here. */
  close_range(3, ~0U, 0);
  signal(SIGPIPE, SIG_IGN);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() == 1) return 0; /* the proxy died before we got here */
  struct rlimit r;
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
  home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  ep = epoll_create1(EPOLL_CLOEXEC);
  fcntl(0, F_SETFL, fcntl(0, F_GETFL) | O_NONBLOCK);
  fcntl(1, F_SETFL, fcntl(1, F_GETFL) | O_NONBLOCK);
  static struct tag ctl_in = {T_CTL_IN, NULL};
  if (ep < 0 || epoll_add(0, &ctl_in, EPOLLIN) != 0) return 1;
  out_str("ready\n");
  out_flush();
  int64_t last_sweep = now_ms();
  struct epoll_event ev[64];
  for (;;) {
    int n = epoll_wait(ep, ev, 64, 1000);
    for (int i = 0; i < n; i++) {
      struct tag *t = ev[i].data.ptr;
      switch (t->type) {
      case T_CTL_IN:
        ctl_read();
        break;
      case T_CTL_OUT:
        break; /* flushed below */
      case T_PROXY_LS: {
        struct sandbox *s = t->p;
        if (!s->dead) accept_all(s->proxy_ls, s->key, NULL, 0);
        break;
      }
      case T_RELAY_LS: {
        struct sandbox *s = t->p;
        for (int fd; !s->dead && (fd = accept4(s->relay_ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
          struct link *l = calloc(1, sizeof *l);
          if (!l) abort();
          *l = (struct link){.tag = {T_LINK, l}, .sb = s, .fd = fd, .ls = -1, .next = s->links};
          s->links = l;
          epoll_add(fd, &l->tag, EPOLLIN | EPOLLRDHUP | EPOLLET);
          link_read(l);
        }
        break;
      }
      case T_LINK:
        if (!((struct link *)t->p)->dead) link_read(t->p);
        break;
      case T_TCP_LS: {
        struct link *l = t->p;
        if (!l->dead) accept_all(l->ls, l->sb->key, l->sb, 1);
        break;
      }
      case T_CLIENT:
      case T_UPSTREAM:
        on_conn_event(t->p, t->type == T_UPSTREAM);
        break;
      }
    }
    if (now_ms() - last_sweep >= 1000) {
      sweep();
      last_sweep = now_ms();
    }
    out_flush();
    for (size_t i = 0; i < ngrave; i++) free(grave[i]);
    ngrave = 0;
  }
}
