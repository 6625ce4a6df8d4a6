/*
 * Which process in a sandbox opened a connection (issue 17: "process where known"), looked up by the
 * pump as the connection arrives, while its client surely holds the socket (nothing has answered it).
 *
 * The socket's inode by its exact 4-tuple with NETLINK_SOCK_DIAG (no dump: a hash lookup, what `ss`
 * uses) in the sandbox's network namespace — taken from the listener the sandbox's relay made there
 * (SIOCGSKNS), entered once with setns to make a netlink socket, which stays in that namespace. Then the
 * process holding that inode, by the /proc/<pid>/fd links: the last holder at the descriptor number it
 * used last first (a client that connects often — a browser, a loop — is usually the next one's too:
 * one readlink), then all of its descriptors, then the container's processes (the cgroup of a holder
 * found before), then every process in that namespace (so a container's first connection needs
 * nothing from the engine), each list newest first. A socket's inode names one socket on the whole machine: whoever has a
 * descriptor for it holds it. Then its name, command line, pid as the sandbox sees it (NSpid) and its
 * ancestry in its pid namespace.
 *
 * Only where the pump may (root: setns, and other users' /proc); otherwise nothing is known, and the
 * log says so. Why by hand: no library does this; it is a few dozen syscalls.
 *
 * It runs in the pump's lookup helper (helper.c), never in the process that parses sandboxes' bytes,
 * and each lookup is bounded (issue 35, item 10): a sandbox with hundreds of processes holding
 * thousands of descriptors each would otherwise make one lookup a scan of a million links. Past its
 * deadline or LOOKUP_MAX_LINKS readlinks the scan is abandoned (the process is then not known, and
 * the log says "process": null) rather than resumed: a later lookup in that sandbox starts again from
 * the last holder, which for a client that connects often is one readlink.
 */
#include "pump.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/sockios.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#define MAX_PROCS 2048
#define MAX_FDS 4096
/* The most links one lookup reads (descriptors and namespaces): ~40 ms of readlinks on this project's machines. */
#define LOOKUP_MAX_LINKS 100000

/* This lookup's budget: links left to read, and when it is abandoned (now_ms). */
static long links_left;
static int64_t scan_deadline;

/* Whether the lookup may read one more link (the clock is read every 64: a readlink costs ~0.4 us). */
static int budget(void) {
  if (links_left <= 0) return 0;
  if ((--links_left & 63) == 0 && now_ms() > scan_deadline) links_left = 0;
  return links_left > 0;
}

static int home_ns = -1;

int lookup_setup(void) {
  home_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  return home_ns >= 0 ? 0 : -1;
}

void lookup_init(struct lookup_ns *ns) {
  memset(ns, 0, sizeof *ns);
  ns->diag_fd = -1;
  ns->last_fd = -1;
}

void lookup_close(struct lookup_ns *ns) {
  if (ns->diag_fd >= 0) close(ns->diag_fd);
  ns->diag_fd = -1;
}

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

void lookup_learn(struct lookup_ns *ns, int listener, int key, void (*say)(const char *fmt, ...)) {
  int nsfd = ioctl(listener, SIOCGSKNS);
  if (nsfd < 0) {
    if (!ns->told) say("sandbox %d: no process lookup (the namespace of its listener: %s)", key, strerror(errno));
    ns->told = 1;
    return;
  }
  struct stat st;
  if (fstat(nsfd, &st) != 0 || (st.st_ino == ns->ino && ns->diag_fd >= 0)) {
    close(nsfd);
    return;
  }
  /* A new namespace (the container restarted): everything learned of the old one goes. */
  lookup_close(ns);
  ns->ino = st.st_ino;
  snprintf(ns->net, sizeof ns->net, "net:[%lu]", (unsigned long)st.st_ino);
  ns->procs[0] = 0;
  ns->last_holder = 0;
  ns->last_fd = -1;
  if (setns(nsfd, CLONE_NEWNET) != 0) {
    if (!ns->told) say("sandbox %d: no process lookup (cannot enter its network namespace: %s)", key, strerror(errno));
    ns->told = 1;
    close(nsfd);
    return;
  }
  ns->diag_fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  /* Back home at once; a pump left in a sandbox's namespace would dial from there: stop instead. */
  if (setns(home_ns, CLONE_NEWNET) != 0) _exit(3);
  close(nsfd);
  if (ns->diag_fd >= 0) {
    struct timeval tv = {0, 200000};
    setsockopt(ns->diag_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
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

/* The inode of the TCP socket whose own end is `src` and whose peer is `dst`, in the namespace; 0: none. */
static unsigned socket_inode(struct lookup_ns *ns, const struct sockaddr_in *src, const struct sockaddr_in *dst) {
  struct {
    struct nlmsghdr h;
    struct inet_diag_req_v2 r;
  } req = {
      .h = {.nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST, .nlmsg_seq = 1},
      .r = {.sdiag_family = AF_INET, .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u},
  };
  req.r.id.idiag_sport = src->sin_port;
  req.r.id.idiag_dport = dst->sin_port;
  memcpy(req.r.id.idiag_src, &src->sin_addr, 4);
  memcpy(req.r.id.idiag_dst, &dst->sin_addr, 4);
  req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  if (send(ns->diag_fd, &req, sizeof req, 0) != (ssize_t)sizeof req) return 0;
  union {
    char b[8192];
    struct nlmsghdr align;
  } ans;
  ssize_t n = recv(ns->diag_fd, ans.b, sizeof ans.b, 0);
  for (struct nlmsghdr *h = &ans.align; n > 0 && NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
    if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY && h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
      return ((struct inet_diag_msg *)NLMSG_DATA(h))->idiag_inode;
    if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE) break;
  }
  return 0;
}

/* The descriptor number by which host pid `p`, a process in the namespace, holds socket:[inode] (`want`); -1: none. */
static int holds(struct lookup_ns *ns, int p, const char *want) {
  char path[64], l[128];
  if (!budget()) return -1;
  snprintf(path, sizeof path, "/proc/%d/ns/net", p);
  if (link_of(path, l, sizeof l) != 0 || strcmp(l, ns->net) != 0) return -1;
  snprintf(path, sizeof path, "/proc/%d/fd", p);
  DIR *d = opendir(path);
  if (!d) return -1;
  int dfd = dirfd(d), found = -1, seen = 0;
  for (struct dirent *e; found < 0 && seen < MAX_FDS && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    if (!budget()) break;
    seen++;
    ssize_t k = readlinkat(dfd, e->d_name, l, sizeof l - 1);
    if (k > 0 && (l[k] = 0, strcmp(l, want) == 0)) found = atoi(e->d_name);
  }
  closedir(d);
  return found;
}

/* The host pid holding socket:[inode] among the sandbox's processes (see the top for the order), 0: none. */
static int holder_of(struct lookup_ns *ns, const char *want) {
  if (ns->last_holder > 0 && ns->last_fd >= 0) {
    char path[64], l[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", ns->last_holder, ns->last_fd);
    if (link_of(path, l, sizeof l) == 0 && strcmp(l, want) == 0) return ns->last_holder;
  }
  int fd;
  if (ns->last_holder > 0 && (fd = holds(ns, ns->last_holder, want)) >= 0) return ns->last_fd = fd, ns->last_holder;
  /*
   * Newest first (the highest pids; both lists come in ascending order): a client that is not the last
   * holder is most often a process just started (a curl, a pip), and a scan that runs out of budget
   * has then tried the likeliest first.
   */
  static char list[MAX_PROCS * 12];
  static int pids[8 * MAX_PROCS];
  int n = 0;
  if (ns->procs[0] && read_file(ns->procs, list, sizeof list) > 0) {
    char *save = NULL;
    for (char *t = strtok_r(list, "\n", &save); t && n < MAX_PROCS; t = strtok_r(NULL, "\n", &save)) pids[n++] = atoi(t);
    while (n > 0 && links_left > 0)
      if (pids[--n] != ns->last_holder && (fd = holds(ns, pids[n], want)) >= 0) return ns->last_fd = fd, pids[n];
  }
  DIR *d = opendir("/proc");
  int holder = 0;
  n = 0;
  for (struct dirent *e; d && n < 8 * MAX_PROCS && (e = readdir(d));)
    if (e->d_name[0] >= '1' && e->d_name[0] <= '9') pids[n++] = atoi(e->d_name);
  if (d) closedir(d);
  while (!holder && n > 0 && links_left > 0)
    if ((fd = holds(ns, pids[--n], want)) >= 0) holder = pids[n], ns->last_fd = fd;
  if (holder) procs_of(holder, ns->procs, sizeof ns->procs);
  return holder;
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

/* The process name from status's first line, as the kernel escapes it there (a backslash and a newline). */
static void name_of(const char *status, char *out, size_t cap) {
  const char *p = status + 6; /* "Name:\t" */
  size_t o = 0;
  for (; *p && *p != '\n' && o + 1 < cap; p++) {
    if (p[0] == '\\' && p[1] == '\\') out[o++] = '\\', p++;
    else if (p[0] == '\\' && p[1] == 'n') out[o++] = '\n', p++;
    else out[o++] = *p;
  }
  out[o] = 0;
}

int lookup(struct lookup_ns *ns, const struct sockaddr_in *src, const struct sockaddr_in *dst, int64_t deadline, struct found *f) {
  memset(f, 0, sizeof *f);
  if (ns->diag_fd < 0) return -1;
  links_left = LOOKUP_MAX_LINKS;
  scan_deadline = deadline;
  unsigned inode = socket_inode(ns, src, dst);
  if (!inode) return -1;
  char want[48];
  snprintf(want, sizeof want, "socket:[%u]", inode);
  int holder = holder_of(ns, want);
  if (!holder) return -1;
  ns->last_holder = holder;
  char path[64], status[4096], pidns[128], nsl[128];
  snprintf(path, sizeof path, "/proc/%d/ns/pid", holder);
  if (link_of(path, pidns, sizeof pidns) != 0) return -1;
  snprintf(path, sizeof path, "/proc/%d/status", holder);
  if (read_once(path, status, sizeof status) <= 0 || strncmp(status, "Name:\t", 6) != 0) return -1;
  f->host_pid = holder;
  f->pid = status_field(status, "\nNSpid:");
  if (f->pid <= 0) return -1;
  name_of(status, f->comm, sizeof f->comm);
  int ppid = status_field(status, "\nPPid:");
  char cmd[CMDLINE_READ + 1];
  snprintf(path, sizeof path, "/proc/%d/cmdline", holder);
  ssize_t mn = read_once(path, cmd, sizeof cmd);
  f->cmdline_len = mn > 0 ? (size_t)mn : 0;
  f->cmdline = xstrndup(cmd, f->cmdline_len);
  for (int host = ppid; host > 0 && f->nancestry < 64;) {
    snprintf(path, sizeof path, "/proc/%d/ns/pid", host);
    if (link_of(path, nsl, sizeof nsl) != 0 || strcmp(nsl, pidns) != 0) break;
    char st[4096];
    snprintf(path, sizeof path, "/proc/%d/status", host);
    if (read_once(path, st, sizeof st) <= 0) break;
    int p = status_field(st, "\nNSpid:");
    if (p <= 0) break;
    f->ancestry[f->nancestry++] = p;
    host = status_field(st, "\nPPid:");
  }
  return 0;
}

void found_free(struct found *f) {
  free(f->cmdline);
  f->cmdline = NULL;
}
