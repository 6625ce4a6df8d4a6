#!/usr/bin/env bash
# `npm run setup`: prepares a fresh Debian/Ubuntu machine for Sandbox Desk — Debian packages, npm
# packages, a running Docker engine, the base image, the sandbox images — and builds the project.
# Idempotent: on a ready machine it checks each step and takes seconds. Never asks questions.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

step() { printf '\n\033[1m==> %s\033[0m\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die() { printf '\nsetup failed: %s\n' "$*" >&2; exit 1; }

SUDO=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || die "not root and no sudo: run setup as root, or install sudo"
  SUDO=(sudo)
fi

# --- Debian packages -------------------------------------------------------------------------------
# docker.io: the engine; debootstrap: builds the base image offline; qemu-*: VM sandboxes;
# chromium: browser-mode tests; openssh-client: VM and ssh sandboxes; socat: stream relays;
# genisoimage: VM cloud-init seeds; e2fsprogs: the VM test image's filesystem;
# podman: the example podman plugin's engine; ffmpeg: the replay's video export (issue 16).
APT_PACKAGES=(docker.io debootstrap qemu-system-x86 qemu-utils genisoimage e2fsprogs chromium openssh-client socat
              ca-certificates git python3 make g++ xz-utils util-linux procps podman ffmpeg)
# asciinema: the replay tests check that the recorded terminals (.cast) are what asciinema reads.
APT_PACKAGES+=(asciinema)
# gcc + libc6-dev (the Linux headers with it): the egress proxy's data path, src/sandbox/network/egress-pump.c, and the
# service's peer-uid addon (src/service/native/, against the node-api-headers devDependency),
# compiled by `npm run build` (scripts/build-native.mjs).
APT_PACKAGES+=(gcc libc6-dev)
# fonts-dejavu-core: the text of the card a replay export draws over a gap (sharp → librsvg → fontconfig);
# chromium pulls it in today, named so the card keeps its words without it.
APT_PACKAGES+=(fonts-dejavu-core)
# clang + libclang-rt-14-dev (libFuzzer and the sanitizer runtimes for bookworm's clang 14): the standing
# fuzzer of the pump's parsers, test/hardening/pump-fuzz.test.ts (clang -fsanitize=fuzzer,address,undefined).
APT_PACKAGES+=(clang libclang-rt-14-dev)
step "Debian packages"
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  note "installing: ${missing[*]}"
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -q
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
else
  note "all present"
fi

# --- npm packages ----------------------------------------------------------------------------------
# The Electron binary comes from GitHub, which some machines cannot reach: install without it, then
# try to fetch it separately so a failure only disables the Electron window (browser mode still works).
step "npm packages"
stamp=node_modules/.sandbox-desk-lock.sha
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  note "up to date"
else
  ELECTRON_SKIP_BINARY_DOWNLOAD=1 PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi
if [ ! -f node_modules/electron/path.txt ] && [ "${CI:-}" != true ]; then
  if timeout 120 node node_modules/electron/install.js >/dev/null 2>&1; then
    note "Electron binary installed"
  else
    note "Electron binary could not be downloaded: use the browser mode (sandbox-desk serve); Electron tests will be skipped"
  fi
fi

# --- Docker engine ---------------------------------------------------------------------------------
step "Docker engine"
if docker info >/dev/null 2>&1; then
  note "running ($(docker info --format '{{.ServerVersion}}'))"
else
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    "${SUDO[@]}" systemctl start docker
  else
    note "starting dockerd (log: /var/log/sandbox-desk-dockerd.log)"
    "${SUDO[@]}" sh -c 'nohup dockerd >/var/log/sandbox-desk-dockerd.log 2>&1 &'
  fi
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || die "the Docker engine did not come up; see /var/log/sandbox-desk-dockerd.log"
  note "running ($(docker info --format '{{.ServerVersion}}'))"
fi

# --- Base image --------------------------------------------------------------------------------------
# The Dockerfiles say FROM debian:bookworm-slim. Where no registry can be reached, make that image
# ourselves from Debian's own packages (debootstrap + docker import), so the Dockerfiles stay ordinary.
step "Base image debian:bookworm-slim"
if docker image inspect debian:bookworm-slim >/dev/null 2>&1; then
  note "present"
elif timeout 60 docker pull -q debian:bookworm-slim >/dev/null 2>&1; then
  note "pulled"
else
  # The machine's own Debian mirror (apt is configured to reach it); not every file exists everywhere.
  mirror=$(cat /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null | grep -m1 -oE '^(URIs:|deb) +https?://[^ ]+' | awk '{print $2}' || true)
  mirror=${mirror:-http://deb.debian.org/debian}
  note "no registry reachable: building it with debootstrap from $mirror (about a minute)"
  rootfs=$(mktemp -d /tmp/sandbox-desk-rootfs.XXXXXX)
  trap 'rm -rf "$rootfs"' EXIT
  # Progress: one line per stage, and every 40th step within it.
  "${SUDO[@]}" debootstrap --variant=minbase bookworm "$rootfs" "$mirror" 2>&1 | awk '
    /^I: / { stage = $2; n++; if (stage != last || n % 40 == 0) { print "    debootstrap: " substr($0, 4); fflush() } last = stage }'
  [ "${PIPESTATUS[0]}" = 0 ] || die "debootstrap failed (mirror $mirror)"
  "${SUDO[@]}" tar -C "$rootfs" -c . | docker import - debian:bookworm-slim >/dev/null
  "${SUDO[@]}" rm -rf "$rootfs"
  trap - EXIT
  note "imported"
fi

# --- Sandbox images -------------------------------------------------------------------------------
# Each image is labelled with a hash of its build context and of the image it is built FROM; an image
# whose hash matches is up to date, so a second setup builds nothing.
build_image() {
  local tag=$1 dir=$2 parent=${3:-} hash have
  hash=$( { (cd "$dir" && find . -type f -print0 | sort -z | xargs -0 sha256sum)
            [ -z "$parent" ] || docker image inspect -f '{{.Id}}' "$parent"; } | sha256sum | cut -c1-16)
  have=$(docker image inspect -f '{{ index .Config.Labels "io.sandbox-desk.context-hash" }}' "$tag" 2>/dev/null || true)
  if [ "$have" = "$hash" ]; then note "$tag up to date"; return; fi
  note "building $tag"
  docker build --label "io.sandbox-desk.context-hash=$hash" -t "$tag" "$dir" 2>&1 | while IFS= read -r line; do
    case "$line" in Step*|Successfully*|ERROR*|error*) printf '    %s\n' "$line";; esac
  done
  [ "${PIPESTATUS[0]}" = 0 ] || die "building $tag failed; run: docker build -t $tag $dir"
}
step "Sandbox images"
build_image sandbox-desk/base:latest resources/images/base
build_image sandbox-desk/desktop:latest resources/images/desktop sandbox-desk/base:latest
# The ssh plugin's tests log into this one over SSH.
build_image sandbox-desk/sshd:latest resources/images/sshd sandbox-desk/desktop:latest

# --- Podman image ----------------------------------------------------------------------------------
# The podman plugin's default image is the same sandbox-desk/base, copied from Docker (no registry
# needed). The image id is the same in both engines, so an unchanged image is not copied again.
step "Podman image localhost/sandbox-desk/base"
want=$(docker image inspect -f '{{.Id}}' sandbox-desk/base:latest | sed 's/^sha256://')
have=$(podman image inspect --format '{{.Id}}' localhost/sandbox-desk/base:latest 2>/dev/null || true)
if [ "$have" = "$want" ]; then
  note "up to date"
else
  note "copying sandbox-desk/base:latest from docker into podman"
  docker save sandbox-desk/base:latest | podman load -q >/dev/null || die "podman could not load the image; try: docker save sandbox-desk/base:latest | podman load"
  note "copied"
fi

# --- VM image ----------------------------------------------------------------------------------------
# The small Debian guest that `--backend qemu --image debian-test` boots. The script skips the build when
# its stamp matches (about 80 s cold). Built where every user of this machine finds it by name.
step "VM image debian-test"
"${SUDO[@]}" env MIRROR="${MIRROR:-}" bash resources/vm/build-vm-image.sh debian-test /var/cache/sandbox-desk/images/debian-test | sed 's/^/    /'

# The desktop VM image (`--image debian-desktop`): the same guest with Chromium. It shares debian-test's
# debootstrap stage (the minbase tarball in /var/cache/sandbox-desk/images/.minbase-cache), so it costs
# stage 2 onwards only; skipped like debian-test when its stamp matches.
step "VM image debian-desktop"
"${SUDO[@]}" env MIRROR="${MIRROR:-}" bash resources/vm/build-vm-image.sh debian-desktop /var/cache/sandbox-desk/images/debian-desktop | sed 's/^/    /'

# --- Build -------------------------------------------------------------------------------------------
step "Build"
npm run build --silent
npm run build:renderer --silent >/dev/null

# --- The command on the PATH ---------------------------------------------------------------------------
# As `npm link` does for the bin: <npm global prefix>/bin/sandbox-desk → this checkout's bin/sandbox-desk.js,
# so the README's `sandbox-desk …` works in any shell (npx costs ~1 s a call). Only the symlink: nothing
# is installed. Idempotent: a link that already points here is left alone.
step "sandbox-desk on the PATH"
bindir="$(npm prefix -g)/bin"
link="$bindir/sandbox-desk"
if [ "$(readlink -f "$link" 2>/dev/null || true)" = "$ROOT/bin/sandbox-desk.js" ]; then
  note "already linked: $link"
else
  chmod +x "$ROOT/bin/sandbox-desk.js"
  if mkdir -p "$bindir" 2>/dev/null && [ -w "$bindir" ]; then
    ln -sfn "$ROOT/bin/sandbox-desk.js" "$link"
  else
    "${SUDO[@]}" mkdir -p "$bindir"
    "${SUDO[@]}" ln -sfn "$ROOT/bin/sandbox-desk.js" "$link"
  fi
  note "linked: $link → $ROOT/bin/sandbox-desk.js"
fi
case ":$PATH:" in
  *":$bindir:"*) ;;
  *) note "note: $bindir is not on your PATH; add it (e.g. export PATH=\"$bindir:\$PATH\") to call sandbox-desk by name" ;;
esac
note "done: try \`sandbox-desk sandbox create demo --backend docker\`"
