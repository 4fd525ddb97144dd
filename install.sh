#!/usr/bin/env bash
# Installs everything guestbench needs on Debian/Ubuntu: system packages (build
# tools, the environments it measures), the Python environment in .venv, and
# the agent. Safe to run again. Needs root (or sudo) for apt-get.
set -euo pipefail
cd "$(dirname "$0")"

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

# install PACKAGE... (with --no-install-recommends first: without their recommends) installs
# those of them that are not installed yet.
install() {
  local options=() missing=() package
  if [ "$1" = --no-install-recommends ]; then options+=("$1"); shift; fi
  for package in "$@"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
      || missing+=("$package")
  done
  [ "${#missing[@]}" -gt 0 ] || return 0
  echo "install.sh: installing ${missing[*]}${options:+ (without their recommends)}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${options[@]}" "${missing[@]}" >/dev/null
}
# The packages, by what needs them, are in guestbench/packages.toml (guestbench doctor reads
# the same list): those installed with their recommends, then those without (Xen's: their
# recommends, xen-hypervisor-common and grub-xen-host, would make GRUB boot this machine into
# Xen by default; none of their daemons starts outside a Xen dom0, their units check /proc/xen).
command -v python3 >/dev/null || install python3  # reads the list
listed=$(python3 guestbench/packages.py apt)
mapfile -t lists <<< "$listed"
read -ra PACKAGES <<< "${lists[0]}"
read -ra NO_RECOMMENDS <<< "${lists[1]:-}"
if [ "${1:-}" = --print-packages ]; then  # what it would install, for the test of the list
  echo "${PACKAGES[*]}"; echo "${NO_RECOMMENDS[*]}"; exit 0
fi
install "${PACKAGES[@]}"
[ "${#NO_RECOMMENDS[@]}" -eq 0 ] || install --no-install-recommends "${NO_RECOMMENDS[@]}"

# CRIU before 4.1 fails on kernels from 6.13 on (Debian 12 has 3.17): then a newer one,
# built from Debian's source, goes into /usr/local/sbin.
if [ "$(id -u)" -eq 0 ] && ! criu check >/dev/null 2>&1; then
  echo "install.sh: \`criu check\` fails with CRIU $(criu --version 2>/dev/null | head -n 1 | cut -d' ' -f2): building CRIU 4.1.1 (about a minute)"
  bash install-criu.sh || echo "install.sh: note: CRIU 4.1.1 did not build; runc's snapshots will be unsupported"
fi

if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then  # none yet, or one cut short
  python3 -m venv --clear .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'

# A UML kernel sets its processes' FPU registers with the host's whole XSAVE area; Debian 12's
# (6.1) passes a fixed size, and panics at boot on a host whose area is larger (AMX). Where the
# uml kind's probe refuses it for that, a kernel that sizes it from the host goes into
# /usr/local/bin, ahead of /usr/bin/linux.uml on PATH (then the probe accepts it: no rebuild).
uml_program=$(command -v linux.uml || true)
if [ -n "$uml_program" ]; then
  uml_release=$("$uml_program" --version 2>/dev/null | head -n 1 || true)
  xsave_bytes=$(.venv/bin/python -c 'import sys
from guestbench import xsave
from guestbench.environments.kinds.uml import xsave_refusal
host_bytes = xsave.host_xsave_bytes()
print(host_bytes if xsave_refusal(sys.argv[1], sys.argv[2] or None, host_bytes) else "")' \
    "$uml_program" "$uml_release")
  if [ -n "$xsave_bytes" ]; then
    echo "install.sh: $uml_program (Linux $uml_release) cannot set this host's $xsave_bytes-byte XSAVE area: building a UML kernel that sizes it from the host (10 to 20 minutes)"
    bash install-uml.sh \
      || echo "install.sh: note: the UML kernel did not build; uml will be unavailable (its probe says why)"
  fi
fi

make -s -C agent

# The durability check (fsync_honoured) traces the guest's disk with the kernel's block
# tracepoints, in a private ftrace instance: tracefs must be mounted (systemd does this on
# most machines; a minimal VM may not). Nothing else about tracing is changed.
if [ ! -d /sys/kernel/tracing/instances ] && [ "$(id -u)" = 0 ]; then
  mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null \
    || echo "install.sh: note: could not mount tracefs; fsync_honoured will be unsupported"
fi
echo "install.sh: ready: .venv/bin/guestbench ($(.venv/bin/guestbench --version)), agent/gbagent"
