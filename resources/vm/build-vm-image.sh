#!/usr/bin/env bash
# Builds the small Debian bookworm guest image for the (future) `qemu` sandbox provider:
#   OUTDIR/vmlinuz, OUTDIR/initrd.img   direct kernel boot (no bootloader, no partition table)
#   OUTDIR/disk.qcow2                   compressed qcow2 holding one ext4 filesystem (root=/dev/vda)
#   OUTDIR/image.json                   what a provider needs to boot it
# The guest is configured at first boot by a cloud-init NoCloud seed (ISO labelled `cidata`); see README.md.
#
#   sudo resources/vm/build-vm-image.sh NAME OUTDIR
#
# NAME is the image to build:
#   debian-test     the desktop's parts without Chromium (small; the qemu provider's tests boot it)
#   debian-desktop  the desktop's parts with Chromium (the bot desktop with a browser in a VM)
# The app's `sandbox-desk image build NAME` calls exactly this interface (src/sandbox/qemu/vm-image-catalog.ts).
#
# Idempotent: if OUTDIR already holds a complete image whose stamp matches this script and NAME, it exits at
# once (FORCE=1 rebuilds). The debootstrap stage is shared between the images: its rootfs is kept as a tarball
# keyed by the suite and the package list (MINBASE_CACHE, default OUTDIR/../.minbase-cache), so the second
# image (and every rebuild after an edit elsewhere in this script) unpacks it instead of debootstrapping again.
# Needs root (debootstrap, chroot, mount). Tools: debootstrap, e2fsprogs (mkfs.ext4 -d), qemu-utils (qemu-img).
# Environment: MIRROR (default: the host's Debian mirror), TMPDIR, FORCE, MINBASE_CACHE (empty string: no cache).
set -euo pipefail

SUITE=bookworm
GUEST_USER=agent
CMDLINE="root=/dev/vda rw console=ttyS0"
PACKAGES=systemd-sysv,udev,openssh-server,ifupdown,isc-dhcp-client,linux-image-cloud-amd64,ca-certificates,sudo,python3,iproute2,procps
# The bot desktop's parts (the same as resources/images/desktop, minus Chromium, which is too slow to be
# useful under TCG): the desktop runs in the VM through the same code as in Docker, and is tested there.
DESKTOP_PACKAGES="tigervnc-standalone-server xauth x11-utils x11-xserver-utils xfwm4 xfdesktop4 xfce4-panel xfce4-settings xfconf dbus-x11 xdotool socat fonts-dejavu-core adwaita-icon-theme"

usage() { echo "usage: $0 NAME OUTDIR   (NAME: debian-test | debian-desktop)" >&2; exit 2; }
[ $# -eq 2 ] || usage
NAME=$1
# Per image: what it adds to the shared parts, its virtual disk size, and what image.json says about it.
case "$NAME" in
  debian-test)
    EXTRA_PACKAGES=""
    DISK_SIZE=3G
    DESKTOP=false CHROMIUM=false MEMORY_MB=1024
    ;;
  debian-desktop)
    # Chromium (and the fonts pages expect) on top of the same desktop: the bot desktop with its browser;
    # xclip for the desktop's clipboard, as in the Docker desktop image. Xfce plus Chromium does not fit
    # well in debian-test's 1 GiB, so image.json asks for 2 GiB (the provider's default for this image).
    EXTRA_PACKAGES="chromium fonts-liberation xclip"
    DISK_SIZE=4G
    DESKTOP=true CHROMIUM=true MEMORY_MB=2048
    ;;
  *) echo "error: this script builds debian-test and debian-desktop, not '$1'" >&2; exit 2 ;;
esac
shift
[ "$(id -u)" -eq 0 ] || { echo "error: must run as root (debootstrap, chroot and mount need it)" >&2; exit 1; }
for bin in debootstrap mkfs.ext4 qemu-img chroot mount umount findmnt sha256sum; do
  command -v "$bin" >/dev/null || { echo "error: $bin not found (apt-get install -y debootstrap e2fsprogs qemu-utils)" >&2; exit 1; }
done

OUTDIR=$(realpath -m "$1")
SCRIPT=$(realpath "${BASH_SOURCE[0]}")
START=$(date +%s)
STAGES=6
stage() { printf '[build-vm-image +%3ds] stage %s/%s: %s\n' "$(( $(date +%s) - START ))" "$1" "$STAGES" "$2"; }
note()  { printf '[build-vm-image +%3ds]   %s\n' "$(( $(date +%s) - START ))" "$*"; }

# The content stamp: this script's bytes (which hold the package lists, the config and the cmdline), the suite
# and the image's name. The mirror is left out on purpose: another mirror gives the same image.
STAMP=$( { cat "$SCRIPT"; echo "$SUITE"; echo "$NAME"; } | sha256sum | cut -d' ' -f1)
# The shared debootstrap stage's key: only what debootstrap is given (so editing anything after stage 1 reuses it).
MINBASE_KEY=$(printf 'minbase %s %s\n' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-16)
MINBASE_CACHE=${MINBASE_CACHE-$(dirname "$OUTDIR")/.minbase-cache}
MINBASE_TAR=${MINBASE_CACHE:+$MINBASE_CACHE/minbase-$SUITE-$MINBASE_KEY.tar}

complete() {
  local f
  for f in vmlinuz initrd.img disk.qcow2 image.json .stamp; do [ -s "$OUTDIR/$f" ] || return 1; done
  [ "$(cat "$OUTDIR/.stamp")" = "$STAMP" ]
}
if [ "${FORCE:-0}" != 1 ] && complete; then
  echo "[build-vm-image] $OUTDIR is up to date (stamp ${STAMP:0:12}); nothing to do (FORCE=1 rebuilds)"
  exit 0
fi

# The host's own Debian mirror unless MIRROR is set: first non-security URI of the deb822 sources, then sources.list.
host_mirror() {
  local m=""
  m=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' \
        /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n1) || true
  [ -n "$m" ] || m=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^(https?|file):/) { print $i; exit } }' \
        /etc/apt/sources.list 2>/dev/null | head -n1) || true
  echo "${m:-http://deb.debian.org/debian}"
}
MIRROR=${MIRROR:-$(host_mirror)}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/sdesk-vm-build.XXXXXX")
ROOTFS=$WORK/rootfs
STAGING=""
MOUNTS=()

unmount_all() {
  local i m
  for (( i = ${#MOUNTS[@]} - 1; i >= 0; i-- )); do
    m=${MOUNTS[$i]}
    if mountpoint -q "$m"; then umount "$m" 2>/dev/null || umount -l "$m" || true; fi
  done
  MOUNTS=()
}
cleanup() {
  local rc=$?
  set +e
  unmount_all
  # Also whatever debootstrap mounted itself (its target /proc) if it was interrupted: deepest first.
  findmnt -rn -o TARGET | grep "^$WORK/" | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m"; done
  # Never rm -rf a tree that still has something mounted under it (a bind-mounted /dev would be emptied).
  if findmnt -rn -o TARGET | grep -q "^$WORK"; then
    echo "[build-vm-image] WARNING: mounts left under $WORK; not removing it" >&2
  else
    rm -rf "$WORK"
  fi
  [ -z "$STAGING" ] || rm -rf "$STAGING"
  [ $rc -eq 0 ] || echo "[build-vm-image] FAILED (exit $rc) after $(( $(date +%s) - START ))s" >&2
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_chroot() {
  mount -t proc proc "$ROOTFS/proc";          MOUNTS+=("$ROOTFS/proc")
  mount -t sysfs sysfs "$ROOTFS/sys";         MOUNTS+=("$ROOTFS/sys")
  mount --bind /dev "$ROOTFS/dev";            MOUNTS+=("$ROOTFS/dev")
  mount --bind /dev/pts "$ROOTFS/dev/pts";    MOUNTS+=("$ROOTFS/dev/pts")
}
in_chroot() { DEBIAN_FRONTEND=noninteractive LC_ALL=C.UTF-8 chroot "$ROOTFS" "$@"; }

# ---------------------------------------------------------------------------------------------------------------
if [ -n "$MINBASE_TAR" ] && [ -s "$MINBASE_TAR" ]; then
  stage 1 "unpack the cached $SUITE minbase (${MINBASE_TAR##*/}) into $ROOTFS"
  mkdir -p "$ROOTFS"
  tar -C "$ROOTFS" --numeric-owner --xattrs --xattrs-include='*' -xpf "$MINBASE_TAR"
else
  stage 1 "debootstrap $SUITE (minbase) from $MIRROR into $ROOTFS"
  debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$ROOTFS" "$MIRROR" > "$WORK/debootstrap.log" 2>&1 || {
    tail -n 30 "$WORK/debootstrap.log" >&2; [ -f "$ROOTFS/debootstrap/debootstrap.log" ] && tail -n 30 "$ROOTFS/debootstrap/debootstrap.log" >&2
    exit 1
  }
  if [ -n "$MINBASE_TAR" ]; then
    # Written beside and renamed: an interrupted build never leaves a half tarball under the real name.
    # Uncompressed: unpacking ~400 MB costs seconds, decompressing would cost more CPU than it saves here.
    mkdir -p "$MINBASE_CACHE"
    rm -f "$MINBASE_CACHE"/minbase-"$SUITE"-*.tar    # older keys: a new package list makes them dead weight
    tar -C "$ROOTFS" --numeric-owner --xattrs --xattrs-include='*' -cf "$MINBASE_TAR.tmp.$$" . \
      && mv -f "$MINBASE_TAR.tmp.$$" "$MINBASE_TAR" || { rm -f "$MINBASE_TAR.tmp.$$"; note "could not cache the minbase (continuing)"; }
    [ -s "$MINBASE_TAR" ] && note "cached the minbase as $MINBASE_TAR ($(du -h "$MINBASE_TAR" | cut -f1))"
  fi
fi

# ---------------------------------------------------------------------------------------------------------------
# cloud-init is a second step: `--include=cloud-init` fails inside debootstrap (python3-cryptography's configure).
# dbus: without it systemd-logind does not start, and then nothing acts on the ACPI power button, so QMP
# `system_powerdown` is ignored by the guest (measured: still running after 60 s).
stage 2 "install cloud-init, dbus and the desktop's parts${EXTRA_PACKAGES:+ (with $EXTRA_PACKAGES)} in the chroot"
cp -L /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' > "$ROOTFS/usr/sbin/policy-rc.d"; chmod 0755 "$ROOTFS/usr/sbin/policy-rc.d"
mount_chroot
in_chroot apt-get update -q > "$WORK/apt.log" 2>&1 || { tail -n 30 "$WORK/apt.log" >&2; exit 1; }
# shellcheck disable=SC2086  # DESKTOP_PACKAGES is a word list
in_chroot apt-get install -y -q --no-install-recommends cloud-init dbus $DESKTOP_PACKAGES $EXTRA_PACKAGES >> "$WORK/apt.log" 2>&1 \
  || { tail -n 30 "$WORK/apt.log" >&2; exit 1; }
note "$(in_chroot dpkg-query -W -f='${Package} ${Version}  ' cloud-init dbus)"
CHROMIUM_VERSION=""
if [ "$CHROMIUM" = true ]; then
  CHROMIUM_VERSION=$(in_chroot dpkg-query -W -f='${Version}' chromium)
  note "chromium $CHROMIUM_VERSION"
fi

# ---------------------------------------------------------------------------------------------------------------
stage 3 "configure the guest (cloud-init NoCloud, network, console, fstab, identity)"
# cloud-init: NoCloud seed only (then None, so a boot without a seed still finishes instead of searching).
cat > "$ROOTFS/etc/cloud/cloud.cfg.d/90-datasource.cfg" <<'EOF'
datasource_list: [ NoCloud, None ]
EOF
# Network: the seed normally carries no network-config, so cloud-init renders its fallback (DHCP on the one NIC,
# whatever udev named it) with the ifupdown ("eni") renderer into /etc/network/interfaces.d/50-cloud-init.
cat > "$ROOTFS/etc/cloud/cloud.cfg.d/91-sandbox-desk.cfg" <<'EOF'
# Sandbox Desk test image.
system_info:
  network:
    renderers: [ eni ]
# Each VM gets its own host keys at first boot (the seed brings the one the app pinned).
ssh_deletekeys: true
# ed25519 only: RSA key generation costs seconds under TCG before sshd may start.
ssh_genkeytypes: [ ed25519 ]
# There is no `locales` package (minbase): cc_locale's update-locale would fail and mark cloud-init "error".
locale: false
# The hostname from meta-data goes into /etc/hosts too (else sudo warns "unable to resolve host").
manage_etc_hosts: true
# No password logins at all; the seed's users log in with keys.
ssh_pwauth: false
disable_root: true
# Only the modules a Sandbox Desk seed uses, or that a larger disk needs: under TCG each module costs
# (measured on bookworm's 22.4: grub-dpkg 4.3 s, set-passwords 2.4 s and a restart of sshd, keys-to-console
# 3 s, apt-configure 1.8 s to keep sources.list as it is), and a boot waits for all of cloud-init: 128 → 117 s
# to ready. Password logins are off in sshd's own config below, so set-passwords has nothing to do.
cloud_init_modules: [ seed_random, write-files, growpart, resizefs, set_hostname, update_hostname, update_etc_hosts, users-groups, ssh ]
cloud_config_modules: [ runcmd ]
cloud_final_modules: [ write-files-deferred, scripts-per-once, scripts-per-boot, scripts-per-instance, scripts-user, final-message ]
EOF
mkdir -p "$ROOTFS/etc/ssh/sshd_config.d"
cat > "$ROOTFS/etc/ssh/sshd_config.d/50-sandbox-desk.conf" <<'EOF'
# Keys only (what cloud-init's ssh_pwauth: false would write at every first boot, restarting sshd for it).
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin no
# No lastlog lookup for a terminal's login (the app opens them; nobody reads the line).
PrintLastLog no
EOF
# Every SSH connection opens a PAM session, and under TCG each module that starts a program costs: pam_motd
# runs run-parts over update-motd.d (uname) for a message of the day no Sandbox Desk client shows, pam_mail
# looks for a mailbox nobody has. A VM restored from a template waits on one such login (measured on a
# loaded host: 1.4-3.1 s per connection with them, 1.2-2.2 s without).
sed -i -E '/^session[[:space:]]+optional[[:space:]]+pam_(motd|mail)\.so/s/^/# sandbox-desk: off (TCG cost) # /' "$ROOTFS/etc/pam.d/sshd"
if grep -Eq '^session[[:space:]]+optional[[:space:]]+pam_(motd|mail)' "$ROOTFS/etc/pam.d/sshd"; then
  echo "error: pam_motd/pam_mail are still on in /etc/pam.d/sshd" >&2; exit 1
fi
# sudo without a pseudo-terminal of its own (Debian's sudoers says use_pty): the pty and the process relaying
# it cost 0.1-0.2 s per sudo under TCG (measured), and every restore from a template runs its identity
# script through one sudo. use_pty keeps a command from pushing keystrokes into its caller's terminal; the
# caller here is the agent, who has passwordless sudo anyway.
printf '%s\n' '# Sandbox Desk: no pty per sudo (see build-vm-image.sh).' 'Defaults !use_pty' > "$ROOTFS/etc/sudoers.d/10-sandbox-desk"
chmod 0440 "$ROOTFS/etc/sudoers.d/10-sandbox-desk"
in_chroot visudo -c -q -f /etc/sudoers.d/10-sandbox-desk
cat > "$ROOTFS/etc/network/interfaces" <<'EOF'
# Loopback only here; cloud-init writes the NIC's DHCP stanza into interfaces.d/50-cloud-init at first boot.
source /etc/network/interfaces.d/*

auto lo
iface lo inet loopback
EOF
mkdir -p "$ROOTFS/etc/network/interfaces.d"

# Host keys when the VM is booted without cloud-init doing it (no seed): sshd refuses to start without keys.
cat > "$ROOTFS/etc/systemd/system/ssh-hostkeys-fallback.service" <<'EOF'
[Unit]
Description=Generate missing SSH host keys (fallback when cloud-init did not)
After=cloud-init.service
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A

[Install]
WantedBy=multi-user.target
EOF
in_chroot systemctl enable ssh-hostkeys-fallback.service >/dev/null 2>&1

# Root filesystem: the whole of /dev/vda (no partition table); the cmdline mounts it rw already.
cat > "$ROOTFS/etc/fstab" <<'EOF'
/dev/vda  /  ext4  rw,errors=remount-ro  0  1
EOF
echo localhost > "$ROOTFS/etc/hostname"
cat > "$ROOTFS/etc/hosts" <<'EOF'
127.0.0.1 localhost
::1       localhost ip6-localhost ip6-loopback
EOF
# Serial console: console=ttyS0 on the cmdline makes systemd start serial-getty@ttyS0; nothing else to enable.
# Less jitter in short-lived test VMs: no apt timers, no fstrim/e2scrub timers.
for t in apt-daily.timer apt-daily-upgrade.timer fstrim.timer e2scrub_all.timer e2scrub_reap.service; do
  in_chroot systemctl disable "$t" >/dev/null 2>&1 || true
done
# Root stays locked (no password); access is the seed's user with an SSH key.
in_chroot passwd -l root >/dev/null
# The bot desktop's own account (as in the sandbox-desk/desktop image): the app runs the desktop as it, so
# the display's X cookie, RFB socket and DevTools pipe are not the login user's. uid 1001 leaves 1000 to
# the seed's user, created at first boot. (The login user has sudo here, so `desktop status` says the
# display is shared anyway; the account still keeps a plain shell off the display.)
in_chroot useradd --create-home --home-dir /home/sdesk-display --shell /usr/sbin/nologin --uid 1001 --user-group sdesk-display
chmod 0700 "$ROOTFS/home/sdesk-display"

# ---------------------------------------------------------------------------------------------------------------
stage 4 "clean the rootfs (host keys, machine-id, apt lists, logs)"
in_chroot apt-get clean
unmount_all
rm -f "$ROOTFS/usr/sbin/policy-rc.d"
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/debconf/*-old
rm -f "$ROOTFS"/etc/ssh/ssh_host_*
: > "$ROOTFS/etc/machine-id"                       # empty => systemd makes a fresh one on every VM's first boot
ln -sf /etc/machine-id "$ROOTFS/var/lib/dbus/machine-id"
: > "$ROOTFS/etc/resolv.conf"                      # dhclient fills it in the guest
rm -rf "$ROOTFS"/var/lib/cloud/* "$ROOTFS"/tmp/* "$ROOTFS"/var/tmp/* "$ROOTFS"/root/.bash_history
find "$ROOTFS/var/log" -type f -exec truncate -s 0 {} +
rm -rf "$ROOTFS/debootstrap"

# ---------------------------------------------------------------------------------------------------------------
stage 5 "kernel, initrd and ext4 image"
mkdir -p "$OUTDIR"
STAGING=$(mktemp -d "$OUTDIR/.tmp.XXXXXX")
KERNEL=$(ls "$ROOTFS"/boot/vmlinuz-* | sort -V | tail -n1)
INITRD=$(ls "$ROOTFS"/boot/initrd.img-* | sort -V | tail -n1)
KVER=${KERNEL##*/vmlinuz-}
install -m 0644 "$KERNEL" "$STAGING/vmlinuz"
install -m 0644 "$INITRD" "$STAGING/initrd.img"
note "kernel $KVER"
truncate -s "$DISK_SIZE" "$WORK/root.ext4"
mkfs.ext4 -q -F -L sdesk-root -d "$ROOTFS" "$WORK/root.ext4"
note "ext4 in use: $(du -sh --apparent-size "$ROOTFS" | cut -f1) of files, $(du -h "$WORK/root.ext4" | cut -f1) allocated"

# ---------------------------------------------------------------------------------------------------------------
stage 6 "qcow2 (compressed) and image.json"
qemu-img convert -q -f raw -O qcow2 -c "$WORK/root.ext4" "$STAGING/disk.qcow2"
SIZE=$(stat -c %s "$STAGING/disk.qcow2")
VSIZE=$(qemu-img info --output=json "$STAGING/disk.qcow2" | awk -F'[:,]' '/"virtual-size"/ { gsub(/ /, "", $2); print $2; exit }')
cat > "$STAGING/image.json" <<EOF
{
  "name": "$NAME",
  "suite": "$SUITE",
  "kernel": "vmlinuz",
  "kernel_version": "$KVER",
  "initrd": "initrd.img",
  "disk": "disk.qcow2",
  "disk_format": "qcow2",
  "cmdline": "$CMDLINE",
  "user": "$GUEST_USER",
  "built_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)",
  "size": $SIZE,
  "virtual_size": $VSIZE,
  "desktop": $DESKTOP,
  "chromium": $CHROMIUM,
  "chromium_version": "$CHROMIUM_VERSION",
  "memory_mb": $MEMORY_MB,
  "stamp": "$STAMP"
}
EOF
echo "$STAMP" > "$STAGING/.stamp"
# Swap the new files in; the stamp goes last, so an interrupted swap never looks complete.
rm -f "$OUTDIR/.stamp"
for f in vmlinuz initrd.img disk.qcow2 image.json; do mv -f "$STAGING/$f" "$OUTDIR/$f"; done
mv -f "$STAGING/.stamp" "$OUTDIR/.stamp"
rmdir "$STAGING"
note "disk.qcow2 $(du -h "$OUTDIR/disk.qcow2" | cut -f1) (virtual $DISK_SIZE), vmlinuz $(du -h "$OUTDIR/vmlinuz" | cut -f1), initrd.img $(du -h "$OUTDIR/initrd.img" | cut -f1)"
echo "[build-vm-image] done in $(( $(date +%s) - START ))s: $OUTDIR"
