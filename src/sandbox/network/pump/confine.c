/*
 * What the pump may do once it serves (issue 35, item 13). The pump parses bytes a sandbox chose (request
 * heads, Host, ClientHello) while it runs as the proxy's user — root, where process lookups work. So,
 * after its lookup helper is forked (helper.c, the only part keeping privileges) and before it reads
 * anything a sandbox sent:
 *  - every capability goes: the bounding set (PR_CAPBSET_DROP), the ambient set, then permitted,
 *    effective and inheritable (capset to empty); securebits NOROOT and NO_SETUID_FIXUP, locked, so
 *    that being uid 0 brings none back. It stays uid 0: its files (sockets, logs) are root's own, so
 *    it needs no CAP_DAC_OVERRIDE or CAP_FOWNER to use them;
 *  - PR_SET_NO_NEW_PRIVS: nothing it could execute gains privileges;
 *  - a seccomp allow-list written by hand (a BPF program; libseccomp is not needed for ~60 numbers):
 *    what epoll, accept, dial, splice, the logs and malloc use. socket(2) only for AF_INET, AF_INET6
 *    and AF_UNIX (no netlink, no raw packets). A wrong architecture (a 32-bit or x32 entry into the
 *    64-bit kernel, numbered differently) kills the process: there the numbers would not mean what this
 *    list says. Any other call fails with EPERM rather than killing: the call does not happen either
 *    way, and a rare path this list missed (a C library that uses another stat variant, say) then
 *    fails one operation, which the pump handles, instead of cutting every sandbox's connections.
 * Verify: grep -E 'Cap|NoNewPrivs|Seccomp' /proc/PID/status (docs/network-policy.md).
 */
#include "pump.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <linux/sockios.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define PUMP_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PUMP_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "the pump's seccomp filter knows x86_64 and aarch64"
#endif

/* The pump's calls once it serves (both architectures' names; some exist on one only). */
static const int allowed[] = {
    SYS_read, SYS_write, SYS_writev, SYS_close, SYS_fstat, SYS_newfstatat, SYS_lseek, SYS_mmap, SYS_munmap, SYS_mremap, SYS_brk,
    SYS_mprotect, SYS_madvise, SYS_rt_sigreturn, SYS_rt_sigprocmask, SYS_getpid, SYS_gettid, SYS_tgkill, SYS_exit, SYS_exit_group,
    SYS_epoll_create1, SYS_epoll_pwait, SYS_epoll_ctl, SYS_accept4, SYS_connect, SYS_bind, SYS_listen, SYS_setsockopt, SYS_getsockopt,
    SYS_getsockname, SYS_getpeername, SYS_sendto, SYS_recvfrom, SYS_sendmsg, SYS_recvmsg, SYS_shutdown, SYS_splice, SYS_pipe2,
    SYS_fcntl, SYS_openat, SYS_unlinkat, SYS_fchmodat, SYS_renameat, SYS_mkdirat, SYS_clock_gettime, SYS_gettimeofday,
    SYS_getppid, SYS_futex, SYS_getrandom, SYS_restart_syscall,
#ifdef SYS_statx
    SYS_statx,
#endif
#ifdef SYS_renameat2
    SYS_renameat2,
#endif
#ifdef SYS_epoll_wait
    SYS_epoll_wait,
#endif
#ifdef SYS_accept
    SYS_accept,
#endif
#ifdef SYS_stat
    SYS_stat, SYS_lstat,
#endif
#ifdef SYS_open
    SYS_open, SYS_unlink, SYS_chmod, SYS_rename, SYS_mkdir,
#endif
};

/*
 * The lookup helper's calls: /proc (open, getdents, readlink, read), setns and its netlink socket
 * (socket(2) only for AF_NETLINK), ioctl only for SIOCGSKNS, its socketpair to the pump, malloc.
 */
static const int helper_allowed[] = {
    SYS_read, SYS_write, SYS_close, SYS_openat, SYS_getdents64, SYS_readlinkat, SYS_fstat, SYS_newfstatat, SYS_faccessat,
    SYS_lseek, SYS_mmap, SYS_munmap, SYS_mremap, SYS_brk, SYS_mprotect, SYS_madvise, SYS_setns, SYS_setsockopt, SYS_sendto,
    SYS_recvfrom, SYS_sendmsg, SYS_recvmsg, SYS_clock_gettime, SYS_gettimeofday, SYS_exit, SYS_exit_group, SYS_rt_sigreturn,
    SYS_rt_sigprocmask, SYS_getpid, SYS_gettid, SYS_tgkill, SYS_getppid, SYS_futex, SYS_getrandom, SYS_restart_syscall,
#ifdef SYS_faccessat2
    SYS_faccessat2,
#endif
#ifdef SYS_statx
    SYS_statx,
#endif
#ifdef SYS_open
    SYS_open, SYS_readlink, SYS_access, SYS_stat, SYS_lstat,
#endif
};

#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define DENY BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM)
#define NR_TO_A BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))

/* The pump's filter (helper 0: socket(2) for AF_INET, AF_INET6, AF_UNIX) or the helper's (AF_NETLINK; ioctl SIOCGSKNS). */
static int install_filter(const int *allowed, size_t n, int helper) {
  struct sock_filter f[24 + 2 * n], *p = f;
  *p++ = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PUMP_AUDIT_ARCH, 1, 0);
  *p++ = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  *p++ = (struct sock_filter)NR_TO_A;
#if defined(__x86_64__)
  /* x32 calls share the arch value, with this bit set in the number. */
  *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
  *p++ = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
  /* socket(domain, ...): the domain is the low word of the first argument (both architectures are little-endian). */
  if (!helper) {
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 6);
    *p++ = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0);
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0);
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 0, 1);
    *p++ = (struct sock_filter)ALLOW;
    *p++ = (struct sock_filter)DENY;
  } else {
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 4);
    *p++ = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0]));
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 1);
    *p++ = (struct sock_filter)ALLOW;
    *p++ = (struct sock_filter)DENY;
    /* ioctl(fd, request): the request is the low word of the second argument. */
    *p++ = (struct sock_filter)NR_TO_A;
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ioctl, 0, 4);
    *p++ = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1]));
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SIOCGSKNS, 0, 1);
    *p++ = (struct sock_filter)ALLOW;
    *p++ = (struct sock_filter)DENY;
  }
  *p++ = (struct sock_filter)NR_TO_A;
  for (size_t i = 0; i < n; i++) {
    *p++ = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i], 0, 1);
    *p++ = (struct sock_filter)ALLOW;
  }
  *p++ = (struct sock_filter)DENY;
  struct sock_fprog prog = {.len = (unsigned short)(p - f), .filter = f};
  return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/* Keeps only `keep` of the capabilities: bounding set, ambient, then permitted/effective (inheritable none). */
static int keep_caps(uint64_t keep) {
  /* The bounding set needs CAP_SETPCAP to shrink: done first. Without it (not root), there is nothing to lose. */
  for (int c = 0; prctl(PR_CAPBSET_READ, c, 0, 0, 0) >= 0; c++)
    if (!(keep >> c & 1) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0 && errno != EPERM) return -1;
  prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
                               SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
        0, 0, 0);
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
  struct __user_cap_data_struct d[2];
  if (syscall(SYS_capget, &h, d) != 0) return -1;
  /* What is kept must have been there: not root, the helper keeps what it has (nothing), not more. */
  for (int i = 0; i < 2; i++) {
    uint32_t k = (uint32_t)(keep >> (32 * i));
    d[i].permitted &= k;
    d[i].effective = d[i].permitted;
    d[i].inheritable = 0;
  }
  return syscall(SYS_capset, &h, d) == 0 ? 0 : -1;
}

int confine_helper(uint64_t keep) {
  if (keep_caps(keep) != 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
  return install_filter(helper_allowed, sizeof helper_allowed / sizeof *helper_allowed, 1);
}

int confine_pump(void (*say)(const char *fmt, ...)) {
  if (keep_caps(0) != 0) return say("cannot drop its capabilities: %s", strerror(errno)), -1;
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return say("cannot set no_new_privs: %s", strerror(errno)), -1;
  if (install_filter(allowed, sizeof allowed / sizeof *allowed, 0) != 0) return say("cannot install its seccomp filter: %s", strerror(errno)), -1;
  return 0;
}

static void probe(struct sbuf *out, const char *name, long r) {
  sb_fmt(out, " %s=%s", name, r >= 0 ? "allowed" : errno == EPERM ? "EPERM" : strerrorname_np(errno));
}

void confine_probe(struct sbuf *out) {
  /* Each would succeed, or fail otherwise than EPERM, were it allowed (no capability is needed for these). */
  long r = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, 0);
  probe(out, "socket-netlink", r);
  if (r >= 0) close((int)r);
  /* A path that does not exist: allowed, this would be ENOENT (never a program run). */
  probe(out, "execve", syscall(SYS_execve, "/nonexistent-sandbox-desk-probe", NULL, NULL));
  probe(out, "unshare", syscall(SYS_unshare, 0));
}
