/**
 * What makes a fork of a running VM its own machine. Its memory is a copy of the source's, so at first
 * the guest still holds the source's SSH host key, hostname and MAC (the NIC's address lives in the
 * guest kernel's memory, whatever QEMU's `mac=` says). Right after the fork's saved state is loaded,
 * over one SSH connection pinned to the *source's* known key (never trusted blindly), this script gives
 * the guest the fork's own host key (from stdin), hostname and MAC; the caller then re-pins known_hosts
 * to the new key and checks it answers. A reboot keeps them: the fork's seed carries the same values.
 */
import { randomBytes } from 'node:crypto';
import { shellQuote } from '../shell-quote.js';

/** A random MAC in QEMU's locally used range 52:54:00:xx:xx:xx. */
export function randomMac(): string {
  const b = randomBytes(3);
  return ['52', '54', '00', ...[...b].map((x) => x.toString(16).padStart(2, '0'))].join(':');
}

export const MAC_RE = /^([0-9a-f]{2}:){5}[0-9a-f]{2}$/;

/** A guest hostname from a sandbox name, as provision makes it. */
export function vmHostname(name: string): string {
  return `sdesk-${name}`
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 63);
}

export interface ForkIdentity {
  hostname: string;
  mac: string;
  /** `ssh-ed25519 AAAA… comment`: the public half of privateKey. */
  hostPublicKey: string;
  /** The OpenSSH private host key the host made for the copy (the guest runs no ssh-keygen). */
  privateKey: string;
  /**
   * /etc/machine-id (32 lowercase hex): a copy of a memory state would otherwise share it with its
   * source (journald, DHCP client ids and D-Bus key on it). Absent: left as it is.
   */
  machineId?: string;
  /**
   * The instance id of the copy's own seed, written where cloud-init keeps the last one it ran for, so
   * the guest's record agrees with its seed (a later reboot does not re-run the per-instance steps).
   */
  instanceId?: string;
  /**
   * The host's time (seconds since the epoch) the guest clock is set to, first thing: it stood still
   * while the memory was saved. Absent: the clock is left alone.
   */
  clockEpoch?: number;
}

/** A random machine id (systemd's format: 128 bits as 32 lowercase hex digits). */
export function randomMachineId(): string {
  return randomBytes(16).toString('hex');
}

export const MACHINE_ID_RE = /^[0-9a-f]{32}$/;
const INSTANCE_ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Where a template's guest keeps its identity helper (see identityHelperArmScript): two FIFOs and the
 * helper's pid, in a directory only the login user (and root) may enter.
 */
export const IDENTITY_HELPER_DIR = '/run/sdesk-identity';

/** What the identity channel runs (`command`, as the login user) and feeds it on stdin (`input`). */
export interface IdentityExec {
  command: string;
  /** The root script, the private host key written out in it: never in an argv (ps shows argvs). */
  input: string;
}

/**
 * The identity channel: `command` measures the login user's home (`home=…`, what createEnvironment
 * would measure over another channel) and the guest's clock before it is set (`clock-before=…`, bash's
 * own EPOCHSECONDS, no program started), then hands the root script on its stdin to root: to the
 * template's identity helper when one waits (`identity-via=helper`), else to one `sudo -n sh` (the
 * seed's user has passwordless sudo; `identity-via=sudo`). Everything a copy needs happens on this one
 * channel, because under TCG every SSH connection costs a second or more, and so does every program
 * started: the root script sets the clock, writes the host key, hostname, machine-id and instance id,
 * changes the MAC, and reads the result back (`identity=HOST MAC`), starting only `date` and `ip`.
 *
 * The MAC changes in line, not detached: with arp_notify the guest announces its new address at once
 * (gratuitous ARP), which QEMU's user network learns, so the connection this runs on carries on (the
 * guest's neighbour cache is flushed so it asks again too). The answer after it is the proof.
 */
export function forkIdentityScript(id: ForkIdentity): IdentityExec {
  const host = shellQuote(id.hostname);
  const mac = shellQuote(id.mac);
  const pub = shellQuote(id.hostPublicKey.trim());
  const keyLines = privateKeyLines(id.privateKey);
  // As root, by the helper or one sudo. Each program started costs tens of ms under TCG (exec, the
  // dynamic loader), 0.1 s on a loaded host: what the shell can do itself (kernel files under /proc and
  // /sys, `read`, `printf`, rewriting /etc/hosts) it does; what is left is `date -s`, run beside the
  // rest (a guest has 2 vCPUs), `ip` twice, and perl for the generator's reseed, beside (GUEST_PROGRAMS).
  const asRoot = [
    'set -e',
    ...clockLines(id.clockEpoch),
    // The kernel's generator is the memory's: every copy of one state draws the same bytes until it
    // reseeds (up to a minute on), e.g. the same new X cookie in two desktop copies. The host's random
    // bytes are mixed in and a reseed forced now (RNDRESEEDCRNG; perl: the shell has no ioctl), beside the rest.
    `printf '%s' ${randomBytes(32).toString('hex')} > /dev/urandom`,
    `rp=; if [ -x /usr/bin/perl ]; then perl -e 'open F, ">/dev/urandom" and ioctl F, 0x5207, 0' & rp=$!; fi`,
    'k=/etc/ssh/ssh_host_ed25519_key',
    // Written in place (no mv: a program): no connection is being made while this runs, and a script
    // cut short fails the restore, which removes the copy.
    'umask 077',
    `printf '%s\\n' ${keyLines.map(shellQuote).join(' ')} > $k`,
    'umask 022',
    `printf '%s\\n' ${pub} > $k.pub`,
    'for f in /etc/ssh/ssh_host_rsa_key /etc/ssh/ssh_host_rsa_key.pub /etc/ssh/ssh_host_ecdsa_key /etc/ssh/ssh_host_ecdsa_key.pub; do if [ -e $f ]; then rm -f $f; fi; done',
    // sshd (up to OpenSSH 9.7) re-executes itself for each connection and reads the host key files
    // then: the next connection presents the new key and the open ones (this one) are untouched.
    // Two listeners hold their keys instead and are told to re-read them (SIGHUP re-executes the
    // listener; this channel's processes are untouched): from 9.8 the one that hands its keys to
    // sshd-session, and a template's, which forks connections without re-executing (SSHD_NO_REEXEC).
    // Sent right after the key is written, so the listener's restart overlaps the rest of the script.
    `if [ -e /usr/lib/openssh/sshd-session ] || [ -e /usr/libexec/sshd-session ] || [ -e ${SSHD_NO_REEXEC} ]; then if [ -s /run/sshd.pid ]; then read -r p < /run/sshd.pid; kill -HUP "$p"; fi; fi`,
    // What `hostname NAME` does (sethostname), without starting it.
    `printf '%s' ${host} > /proc/sys/kernel/hostname`,
    `printf '%s\\n' ${host} > /etc/hostname`,
    // What `sed -i 's/^127.0.1.1[[:space:]].*/127.0.1.1 HOST HOST/' /etc/hosts` did, by the shell.
    `h=; while IFS= read -r l || [ -n "$l" ]; do case "$l" in 127.0.1.1[[:space:]]*) l="127.0.1.1 "${host}" "${host};; esac; h="$h$l$NL"; done < /etc/hosts`,
    `printf '%s' "$h" > /etc/hosts`,
    ...machineIdLines(id.machineId),
    ...instanceIdLines(id.instanceId),
    ...NIC_LINES,
    'echo 1 2>/dev/null > /proc/sys/net/ipv4/conf/$i/arp_notify || true',
    `ip link set dev $i address ${mac}`,
    'ip neigh flush dev $i || true',
    'if [ -n "${rp:-}" ]; then wait "$rp" || true; fi',
    ...(id.clockEpoch === undefined ? [] : ['wait "$dp"']),
    'read -r h < /proc/sys/kernel/hostname; read -r a < /sys/class/net/$i/address',
    'echo "identity=$h $a"',
    'echo identity-ok',
    // A helper serves one copy: its directory goes once the answer is out (stdout closed first, so the
    // channel ends without waiting for rm), and a later fork of this copy finds none and uses sudo.
    `if [ -d ${IDENTITY_HELPER_DIR} ]; then exec >/dev/null 2>&1; rm -rf ${IDENTITY_HELPER_DIR}; fi`,
  ];
  // The newline the /etc/hosts rewrite joins lines with (the script is read line by line: set first).
  const input = [`NL='`, `'`, ...asRoot].join('\n') + '\n';
  return { command: identityRelay(id.clockEpoch !== undefined), input };
}

/**
 * The login user's part. The helper is used only when its FIFOs are there and its process lives (the
 * pid checked, so a helper that died never leaves the channel blocked opening a FIFO nobody reads):
 * the root script goes into `in`, the helper's output comes back from `out` and is passed on; it
 * succeeded only if it said `identity-ok`. Builtins only (bash or any POSIX shell), bar the home's
 * subshell and the fallback's sudo.
 */
export function identityRelay(clock: boolean, dir: string = IDENTITY_HELPER_DIR): string {
  const d = shellQuote(dir);
  return [
    'printf "home=%s\\n" "$(cd ~ 2>/dev/null && pwd -P || printf "%s" "$HOME")"',
    // The guest's own time, before root sets it: bash's clock, no `date` started (another shell: empty).
    ...(clock ? ['printf "clock-before=%s\\n" "${EPOCHSECONDS:-}"'] : []),
    `d=${d}; p=`,
    'if [ -p "$d/in" ] && [ -p "$d/out" ] && read -r p 2>/dev/null < "$d/pid" && [ -n "$p" ] && [ -d "/proc/$p" ]; then',
    '  echo identity-via=helper',
    '  exec 4>"$d/in" 5<"$d/out"',
    '  while IFS= read -r l; do printf "%s\\n" "$l"; done >&4',
    '  exec 4>&-',
    '  ok=; while IFS= read -r l <&5; do printf "%s\\n" "$l"; if [ "$l" = identity-ok ]; then ok=1; fi; done',
    '  if [ -z "$ok" ]; then echo "the identity helper stopped before the end of the script" >&2; exit 1; fi',
    'else',
    '  echo identity-via=sudo',
    '  exec sudo -n sh',
    'fi',
  ].join('\n');
}

/**
 * A systemd drop-in a template's build writes (identityHelperArmScript): sshd runs with `-r`, forking a
 * connection's process without re-executing itself. Under TCG the re-exec (the dynamic loader and ~28
 * libraries, the config and keys read again) is most of a connection's cost in the guest: measured in
 * a debian-test guest, 0.3-0.45 s of 1.3-1.8 s per `ssh true`; a copy's first connection is on the path
 * of every create from a template. What re-exec adds is a fresh address-space layout per connection;
 * this sshd is reached only through QEMU's loopback forward, by a client holding the app's key, and
 * the one it serves has root in the guest anyway. The listener then holds its host keys: the identity
 * script sends it SIGHUP after writing the copy's key (its presence is the sign).
 */
export const SSHD_NO_REEXEC = '/etc/systemd/system/ssh.service.d/sdesk-no-reexec.conf';

/**
 * Run once as root (one sudo) in a template's build VM, right before its memory is saved. First, on a
 * Debian-style guest whose sshd runs as ssh.service and still re-executes (before 9.8), sshd is
 * restarted with `-r` (SSHD_NO_REEXEC); if it does not come back, the drop-in goes and it is restarted
 * as it was (`sshd=…` says which). Then the identity helper: a root shell blocked opening `in` (a
 * FIFO), which every copy restored from the template finds waiting. The copy's identity channel writes
 * the root script into it instead of starting sudo — under TCG sudo costs 0.3-0.6 s per restore (its
 * plugin and PAM, loaded and translated anew). The FIFOs and their directory belong to the login user,
 * mode 0700/0600: only that user and root may write them, and that user has passwordless sudo anyway
 * (the seed grants it), so the helper gives nobody a power they did not have. Its answer:
 * `helper-armed PID`.
 */
export function identityHelperArmScript(loginUser: string, dir: string = IDENTITY_HELPER_DIR): string {
  if (!/^[a-z_][a-z0-9_-]*$/.test(loginUser)) throw new Error(`not a login user name: ${JSON.stringify(loginUser)}`);
  const d = shellQuote(dir);
  const helper = `echo $$ > ${d}/pid; exec sh < ${d}/in > ${d}/out 2>&1`;
  const dropIn = ['[Service]', 'ExecStart=', 'ExecStart=/usr/sbin/sshd -D -r $SSHD_OPTS'].map(shellQuote).join(' ');
  return [
    'set -e',
    `if [ ! -e /usr/lib/openssh/sshd-session ] && [ ! -e /usr/libexec/sshd-session ] && [ -x /usr/sbin/sshd ] && systemctl -q is-active ssh.service && ! systemctl -q is-active ssh.socket; then`,
    `  mkdir -p ${SSHD_NO_REEXEC.slice(0, SSHD_NO_REEXEC.lastIndexOf('/'))}`,
    `  printf '%s\\n' ${dropIn} > ${SSHD_NO_REEXEC}`,
    '  systemctl daemon-reload',
    '  if systemctl restart ssh.service && systemctl -q is-active ssh.service; then echo sshd=no-reexec; else',
    `    rm -f ${SSHD_NO_REEXEC}; systemctl daemon-reload; systemctl restart ssh.service; echo sshd=as-it-was`,
    '  fi',
    'fi',
    `rm -rf ${d}`,
    `mkdir -m 0700 ${d}`,
    `mkfifo -m 0600 ${d}/in ${d}/out`,
    `chown ${loginUser} ${d} ${d}/in ${d}/out`,
    // Its own session, stdio away from this channel: the channel ends, the helper stays.
    `setsid sh -c ${shellQuote(helper)} < /dev/null > /dev/null 2>&1 &`,
    `n=0; while [ ! -s ${d}/pid ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done`,
    `read -r p < ${d}/pid`,
    'echo "helper-armed $p"',
  ].join('\n');
}

/** The private key's lines, refused when it is not one OpenSSH key (it is written into a script). */
function privateKeyLines(key: string): string[] {
  const lines = key.trim().split('\n');
  const ok =
    lines.length >= 3 &&
    lines[0] === '-----BEGIN OPENSSH PRIVATE KEY-----' &&
    lines[lines.length - 1] === '-----END OPENSSH PRIVATE KEY-----' &&
    lines.slice(1, -1).every((l) => /^[A-Za-z0-9+/=]+$/.test(l));
  if (!ok) throw new Error('the host key is not an OpenSSH private key');
  return lines;
}

function clockLines(epoch: number | undefined): string[] {
  if (epoch === undefined) return [];
  if (!Number.isInteger(epoch) || epoch <= 0) throw new Error(`not a time in seconds: ${JSON.stringify(epoch)}`);
  // Beside the rest (its own process on the other vCPU); waited for before the answer.
  return [`date -u -s @${epoch} >/dev/null 2>&1 & dp=$!`];
}

/** What the identity script answered, read from its output lines. */
export interface IdentityAnswer {
  /** The login user's home, measured as measure-home.ts does; null when the line is missing. */
  home: string | null;
  /** The guest's clock (epoch seconds) before it was set; null when not set or not said. */
  clockBefore: number | null;
  /** `HOSTNAME MAC` as the guest reads them back after the change; null when missing. */
  identity: string | null;
  /** The script ran to its end. */
  ok: boolean;
  /** Who ran the root script: the template's waiting helper, or sudo; null when not said. */
  via: 'helper' | 'sudo' | null;
}

export function parseIdentityAnswer(stdout: string): IdentityAnswer {
  const answer: IdentityAnswer = { home: null, clockBefore: null, identity: null, ok: false, via: null };
  for (const line of stdout.split('\n')) {
    if (line.startsWith('home=') && line.length > 6 && line[5] === '/') answer.home = line.slice(5);
    else if (line.startsWith('clock-before=') && /^\d+$/.test(line.slice(13))) answer.clockBefore = Number(line.slice(13));
    else if (line.startsWith('identity=')) answer.identity = line.slice(9).trim();
    else if (line === 'identity-ok') answer.ok = true;
    else if (line === 'identity-via=helper' || line === 'identity-via=sudo')
      answer.via = line === 'identity-via=helper' ? 'helper' : 'sudo';
  }
  return answer;
}

function machineIdLines(machineId: string | undefined): string[] {
  if (machineId === undefined) return [];
  if (!MACHINE_ID_RE.test(machineId)) throw new Error(`not a machine id: ${JSON.stringify(machineId)}`);
  // D-Bus keeps its own copy on older systems; it must agree with /etc/machine-id.
  return [
    `printf '%s\\n' ${machineId} > /etc/machine-id`,
    `if [ -f /var/lib/dbus/machine-id ]; then printf '%s\\n' ${machineId} > /var/lib/dbus/machine-id; fi`,
  ];
}

function instanceIdLines(instanceId: string | undefined): string[] {
  if (instanceId === undefined) return [];
  if (!INSTANCE_ID_RE.test(instanceId)) throw new Error(`not a cloud-init instance id: ${JSON.stringify(instanceId)}`);
  return [`if [ -d /var/lib/cloud/data ]; then printf '%s\\n' ${instanceId} > /var/lib/cloud/data/instance-id; fi`];
}

/**
 * `$i`: the NIC of the default route, as `ip -o -4 route show default` would say, read from the kernel's
 * IPv4 routing table by the shell itself (destination and mask 0); else the first interface but lo.
 */
const NIC_LINES = [
  'i=',
  'while read -r n d g f r u m mask rest; do if [ "$d" = 00000000 ] && [ "$mask" = 00000000 ]; then i=$n; break; fi; done < /proc/net/route',
  'if [ -z "$i" ]; then for n in /sys/class/net/*; do n=${n##*/}; if [ "$n" != lo ]; then i=$n; break; fi; done; fi',
  'test -n "$i"',
];

/** The programs the root script starts (beside the shell's builtins): each is an exec under TCG. */
export const GUEST_PROGRAMS = ['date', 'rm', 'ip', 'perl'] as const;

/** The guest's answer to this probe is "hostname mac": what a fork is checked against afterwards. */
export const IDENTITY_PROBE =
  'i=$(ip -o -4 route show default | cut -d" " -f5); test -n "$i" || i=$(ls /sys/class/net | grep -v "^lo$" | head -n1); echo "$(hostname) $(cat /sys/class/net/$i/address)"';
