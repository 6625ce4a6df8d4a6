#!/usr/bin/env bash
# The bot desktop, inside the sandbox, as the desktop's own user (sdesk-display where the image has it;
# else, or when the sandbox grants its shell the display, the sandbox user):
#   Xvnc on a 0600 Unix socket (no TCP listener at all) that also demands an X authority cookie, the Xfce
#   parts under one D-Bus session, and Chromium with its DevTools on a pipe (no TCP port), bridged by
#   cdp-pipe.py to a 0600 Unix socket. DIR is 0700: another user (the agent's shell) reaches none of it.
# Sandbox Desk copies this file and cdp-pipe.py into DIR and starts it in a session of its own:
#   setsid bash launcher.sh DIR DISPLAY WIDTHxHEIGHT MODE        (MODE: isolated | shared | granted)
# It writes DIR/ready when the display answers, DIR/failed (with the reason) when it cannot start.
set -u
dir=$1 disp=$2 geometry=$3 mode=${4:-shared}

umask 077
mkdir -p "$dir" && chmod 0700 "$dir"
rm -f "$dir/ready" "$dir/failed" "$dir/rfb.sock" "$dir/cdp.sock" "$dir/env" "$dir/Xauthority"
echo $$ > "$dir/launcher.pid"
echo "$mode" > "$dir/mode"
fail() { echo "$*" > "$dir/failed"; exit 1; }

for bin in Xvnc xdpyinfo xauth dbus-run-session xfwm4; do
  command -v "$bin" >/dev/null || fail "$bin is not installed in this sandbox (use the image sandbox-desk/desktop:latest)"
done

# The X display demands this cookie (MIT-MAGIC-COOKIE-1): a process that can reach the X socket in
# /tmp/.X11-unix but cannot read this 0600 file gets "Authorization required".
export XAUTHORITY="$dir/Xauthority"
cookie=$(mcookie 2>/dev/null || od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
xauth -q -f "$XAUTHORITY" add ":$disp" MIT-MAGIC-COOKIE-1 "$cookie" || fail "xauth could not write $XAUTHORITY"
# Granted (--grant-shell-display): the sandbox's shell gets the display too, with just DISPLAY=:N.
[ "$mode" = granted ] && xauth -q -f "$HOME/.Xauthority" add ":$disp" MIT-MAGIC-COOKIE-1 "$cookie"

# A lock left by a dead X server would make Xvnc refuse the display: clean it, but never a live one's.
# Live means its pid is an X server now: after a container restart the old pid is often reused by
# another process (the pid namespace starts again), so "the pid exists" is not enough.
lock=/tmp/.X$disp-lock
if [ -f "$lock" ]; then
  owner=$(tr -dc '0-9' < "$lock")
  live=0
  if [ -n "$owner" ]; then
    case "$(cat "/proc/$owner/comm" 2>/dev/null)" in X*) live=1 ;; esac
  fi
  [ "$live" = 1 ] || rm -f "$lock" "/tmp/.X11-unix/X$disp"
fi

# SecurityTypes None is safe only because the socket is 0600 and reached through the exec stream; the
# app authenticates viewers (single-use tickets) before a byte reaches it.
# Cut text flows both ways (the window's clipboard): the app's RFB filter caps what viewers send at
# `clipboard.maxBytes` (at most 16 MiB, hence MaxCutText) and lets only the lease holder paste at all.
# -extension GLX: without it Xvnc loads Mesa's software GL into the X server, ~65 MiB of an idle
# desktop's ~250 MiB (measured with the cgroup's rss); nothing here draws through server GLX
# (xfwm4 runs without its compositor, Chromium renders in its own process and puts images).
Xvnc ":$disp" -auth "$XAUTHORITY" -rfbport -1 -rfbunixpath "$dir/rfb.sock" -rfbunixmode 0600 -nolisten tcp \
  -SecurityTypes None -AlwaysShared -AcceptSetDesktopSize -geometry "$geometry" -depth 24 \
  -FrameRate 60 -MaxCutText 16777216 -extension GLX >"$dir/xvnc.log" 2>&1 &
xvnc=$!

export DISPLAY=":$disp" XDG_RUNTIME_DIR="$dir/xdg"
mkdir -p "$XDG_RUNTIME_DIR"
# Readiness is the display answering, polled — not a fixed sleep.
until xdpyinfo >/dev/null 2>&1; do
  kill -0 "$xvnc" 2>/dev/null || fail "Xvnc exited: $(tail -n 3 "$dir/xvnc.log" | tr '\n' ' ')"
  sleep 0.02
done
[ -S "$dir/rfb.sock" ] || fail "Xvnc did not create $dir/rfb.sock"

# Chromium's own sandbox needs unprivileged user namespaces; a container's default seccomp profile
# blocks them. There the container is the boundary and Chromium runs without its inner sandbox.
chromium_sandbox=1
unshare -U true 2>/dev/null || chromium_sandbox=0
echo "$chromium_sandbox" > "$dir/chromium-sandbox"

# A profile's last session must read as a clean exit, whatever ended it: a restored checkpoint holds the
# profile of a Chromium that was running (exit_type Crashed, written at every start), and a Chromium
# killed with its sandbox (docker kill, a VM reset) leaves the same. Chromium then opens with "Restore
# pages? Chromium didn't shut down correctly". Marked Normal here, before each launch — the state a
# `Browser.close` leaves (chromium-shutdown.ts) — rather than only hidden with --hide-crash-restore-bubble
# (passed too, for a Preferences file this cannot read): the flag hides the bubble of this one start
# and leaves the profile saying it crashed. Also its SingletonLock/Socket/Cookie, which a Chromium of
# another host (the checkpointed container had another hostname) or a dead pid left: a live one would
# make this one refuse the profile ("in use by another computer"). Only when no Chromium of this
# profile runs here (the launcher starts when the desktop is not running; this checks anyway).
clean_profile() {
  local profile=$1 lock owner pid
  lock=$(readlink "$profile/SingletonLock" 2>/dev/null) || lock=
  if [ -n "$lock" ]; then
    owner=${lock%-*} pid=${lock##*-}
    if [ "$owner" = "$(hostname)" ] && [ -n "$pid" ] && [ "$pid" -eq "$pid" ] 2>/dev/null &&
      [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = chromium ]; then
      return 0
    fi
  fi
  rm -f "$profile/SingletonLock" "$profile/SingletonSocket" "$profile/SingletonCookie"
  [ -f "$profile/Default/Preferences" ] || return 0
  python3 - "$profile/Default/Preferences" <<'PY' || echo "could not mark $profile/Default/Preferences as a clean exit" >&2
import json, os, sys
path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    prefs = json.load(f)
profile = prefs.get("profile")
if not isinstance(profile, dict):
    profile = prefs["profile"] = {}
if profile.get("exit_type") != "Normal" or profile.get("exited_cleanly") is not True:
    profile["exit_type"] = "Normal"
    profile["exited_cleanly"] = True
    tmp = path + ".sdesk-tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(prefs, f, separators=(",", ":"))
    os.replace(tmp, path)
PY
}

profile="$HOME/.config/sandbox-desk/chromium"
mkdir -p "$profile"
browser=()
# Memory of an idle desktop (the benchmark's idle-desktop-mem-mib, goal <= 250 MiB): no spare renderer
# kept warm for the next tab, at most two renderers (tabs share them past that), and none of the
# on-device-model / optimization-guide / translate / media-router services an agent's browser does
# not use. Pages, DevTools and several tabs work as before. (--in-process-gpu saved 2 MiB more and lost
# keyboard input to pages: not used.)
# None of Chromium's own background traffic (issue 36): under network mode allow every connection is on
# the network log, and an idle browser's component updates, network-time, safe-browsing, sign-in and
# metrics pings buried the agent's one denied line (test/integration/network-desktop.test.ts).
# AimEnabled: the omnibox's AI-mode eligibility check (www.google.com/async/folae) at every start;
# PreconnectToSearch: a warm connection to the search engine's host before anything is typed. The
# image's managed policy (resources/images/desktop/chromium-policy.json) turns off what only a policy
# reaches (sign-in, spell-check downloads, safe browsing…).
quiet_features=AutofillServerCommunication,CertificateTransparencyComponentUpdater,DialMediaRouteProvider,InterestFeedContentSuggestions,NetworkTimeServiceQuerying,SafeBrowsingEnhancedProtection,PrivacySandboxSettings4,NTPPopularSitesBakedInContent,MediaEngagementBypassAutoplayPolicies,OptimizationGuideFetching,LensOverlay,ChromeWhatsNewUI,Glic,AimEnabled,PreconnectToSearch
quiet_flags=(--disable-client-side-phishing-detection --disable-domain-reliability --safebrowsing-disable-auto-update
  --no-pings --disable-default-apps --disable-component-extensions-with-background-pages --metrics-recording-only
  --disable-breakpad --disable-search-engine-choice-screen --no-service-autorun --disable-field-trial-config)
memory_flags=(--renderer-process-limit=2
  --disable-features=SpareRendererForSitePerProcess,OptimizationGuideOnDeviceModel,OptimizationGuideModelDownloading,OptimizationHintsFetching,OptimizationTargetPrediction,OptimizationHints,Translate,MediaRouter,$quiet_features)
# DevTools on a pipe, never a port: the relay below is the only way in, as this user.
if command -v chromium >/dev/null && python3 -c 'import json' 2>/dev/null; then
  browser=(python3 "$dir/cdp-pipe.py" "$dir/cdp.sock" -- chromium --remote-debugging-pipe
    "--user-data-dir=$profile" --no-first-run --no-default-browser-check --disable-background-networking
    --disable-component-update --disable-sync --password-store=basic --disable-dev-shm-usage
    --hide-crash-restore-bubble "${memory_flags[@]}" "${quiet_flags[@]}" --start-maximized about:blank)
  clean_profile "$profile"
  [ "$chromium_sandbox" = 1 ] || browser+=(--no-sandbox --test-type)
  # Network policy `allow`: the egress relay, said explicitly (enforcement does not depend on it: the
  # sandbox's network has no other route out). SANDBOX_DESK_PROXY comes from the exec's environment.
  [ -z "${SANDBOX_DESK_PROXY:-}" ] || browser+=("--proxy-server=$SANDBOX_DESK_PROXY" "--proxy-bypass-list=<-loopback>")
fi

# Keeps one Xfce piece running: restarted when it dies (at most 5 times, each said in xfce.log).
# Under TCG a piece dies now and then: GDK turns an X error (BadWindow, a window closed mid-request)
# into g_error, and xfsettingsd ended with SIGTRAP in libglib; without it the window manager, desktop
# and panel went too, and the screen stayed bare. A piece that exits 0 was told to (a second instance
# handing over, `--quit`): not restarted.
keep_running() {
  local name=$1 tries=0 code
  shift
  while :; do
    "$@"
    code=$?
    [ "$code" = 0 ] && return 0
    # The X server gone (Xvnc died or was stopped): the piece died with it, and a restart would only fail
    # again, 5 times, each writing errors. The desktop is over; its end is seen elsewhere.
    if ! xdpyinfo >/dev/null 2>&1; then
      echo "sandbox-desk: $name exited ($code); the display is gone, not restarted"
      return "$code"
    fi
    if [ "$tries" -ge 5 ]; then
      echo "sandbox-desk: $name exited ($code); not restarted again after 5 restarts"
      return "$code"
    fi
    tries=$((tries + 1))
    echo "sandbox-desk: $name exited ($code); restart $tries of 5"
    sleep 1
  done
}

# Xfce piece by piece (no xfce4-session: no screensaver, no logout dialog), all in one D-Bus session.
dbus-run-session -- bash -c "$(declare -f keep_running)"'
  printf "DISPLAY=%s\nXAUTHORITY=%s\nDBUS_SESSION_BUS_ADDRESS=%s\n" "$DISPLAY" "$XAUTHORITY" "$DBUS_SESSION_BUS_ADDRESS" > "$0/env"
  keep_running xfsettingsd xfsettingsd --no-daemon & keep_running xfwm4 xfwm4 --compositor=off &
  keep_running xfdesktop xfdesktop & keep_running xfce4-panel xfce4-panel &
  if [ "$#" -gt 0 ]; then "$@" >"$0/chromium.log" 2>&1 & fi
  wait
' "$dir" "${browser[@]}" >"$dir/xfce.log" 2>&1 &

touch "$dir/ready"
wait "$xvnc"
