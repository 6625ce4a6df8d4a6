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
  /** `ssh-ed25519 AAAA… comment`: the public half; the private half is the script's stdin. */
  hostPublicKey: string;
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
}

/** A random machine id (systemd's format: 128 bits as 32 lowercase hex digits). */
export function randomMachineId(): string {
  return randomBytes(16).toString('hex');
}

export const MACHINE_ID_RE = /^[0-9a-f]{32}$/;
const INSTANCE_ID_RE = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * The remote command (values quoted): one `sudo -n sh -c` of a root script; the seed's user has
 * passwordless sudo. The MAC changes last, detached, after the script has answered: with arp_notify
 * the guest announces its new address (gratuitous ARP), which QEMU's user network learns, and the
 * neighbour cache is flushed so the guest asks again.
 */
export function forkIdentityScript(id: ForkIdentity): string {
  const host = shellQuote(id.hostname);
  const mac = shellQuote(id.mac);
  const pub = shellQuote(id.hostPublicKey.trim());
  // One sudo for the whole script, as root: each `sudo` in a TCG guest costs seconds (PAM, logging),
  // and a copy's identity is on the path of every create from a template. stdin (the key) is inherited.
  const asRoot = [
    'set -e',
    'k=/etc/ssh/ssh_host_ed25519_key',
    '(umask 077; cat > $k.sdesk-new)',
    'mv -f $k.sdesk-new $k',
    `printf '%s\\n' ${pub} > $k.pub`,
    'rm -f /etc/ssh/ssh_host_rsa_key /etc/ssh/ssh_host_rsa_key.pub /etc/ssh/ssh_host_ecdsa_key /etc/ssh/ssh_host_ecdsa_key.pub',
    // sshd re-reads its host keys on SIGHUP (it re-executes itself); open sessions stay.
    'if [ -s /run/sshd.pid ]; then kill -HUP "$(cat /run/sshd.pid)"; fi',
    `hostname ${host}`,
    `printf '%s\\n' ${host} > /etc/hostname`,
    `sed -i "s/^127\\.0\\.1\\.1[[:space:]].*/127.0.1.1 "${host}" "${host}"/" /etc/hosts`,
    ...machineIdLines(id.machineId),
    ...instanceIdLines(id.instanceId),
    'i=$(ip -o -4 route show default | cut -d" " -f5)',
    'test -n "$i" || i=$(ls /sys/class/net | grep -v "^lo$" | head -n1)',
    'sysctl -qw "net.ipv4.conf.$i.arp_notify=1" || true',
    // Detached, a moment after this connection has closed cleanly: a MAC change under a live connection
    // stalls it until SSH's keepalive gives up (about a minute); the caller polls for the new MAC instead.
    `setsid sh -c "sleep 1; ip link set dev $i address ${mac}; ip neigh flush dev $i" </dev/null >/dev/null 2>&1 &`,
    'echo identity-ok',
  ].join('\n');
  return `sudo -n sh -c ${shellQuote(asRoot)}`;
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

/** The guest's answer to this probe is "hostname mac": what a fork is checked against afterwards. */
export const IDENTITY_PROBE =
  'i=$(ip -o -4 route show default | cut -d" " -f5); test -n "$i" || i=$(ls /sys/class/net | grep -v "^lo$" | head -n1); echo "$(hostname) $(cat /sys/class/net/$i/address)"';
