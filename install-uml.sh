#!/usr/bin/env bash
# A User-Mode Linux kernel that sizes its FPU state from the host's XSAVE area: Linux 6.12 from
# Debian's linux-source-6.12 with uml/xsave-sized.patch, built for this machine into
# /usr/local/bin/linux.uml, ahead of Debian's /usr/bin/linux.uml on PATH. Debian 12's UML kernel
# (6.1) sets each process's FPU registers with a fixed 2696 bytes, and a host whose XSAVE area is
# larger (AMX: 11008 bytes) takes no less: the guest panics at boot ("ptrace set fp regs failed,
# errno = 14"). install.sh runs this only where guestbench's uml probe refuses Debian's kernel.
# Its release ends in -xsave-sized, which the probe recognises. Needs root for apt-get; takes
# 10 to 20 minutes on 2 CPUs (24 CPU-minutes of compiling). Nothing is done if the installed
# kernel has this patch's hash.
#
#   bash install-uml.sh [--prefix DIR]    installs DIR/linux.uml (default /usr/local/bin)
set -euo pipefail
cd "$(dirname "$0")"

PREFIX=/usr/local/bin
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) PREFIX=${2:?--prefix needs a folder}; shift 2 ;;
    --prefix=*) PREFIX=${1#--prefix=}; shift ;;
    *) echo "usage: bash install-uml.sh [--prefix DIR]" >&2; exit 2 ;;
  esac
done

SERIES=6.12
MARK=-xsave-sized  # guestbench.environments.kinds.uml.XSAVE_SIZED_MARK
PATCH=$PWD/uml/xsave-sized.patch
FRAGMENT=$PWD/uml/xsave-sized.config
BASE_CONFIG=/usr/share/doc/user-mode-linux/config.gz  # Debian's own UML configuration
BUILD_DEPS=(linux-source-$SERIES user-mode-linux build-essential flex bison bc patch xz-utils)
TARGET=$PREFIX/linux.uml

# What Debian builds as modules is left out (sed on its configuration): the guests load none,
# and without MODULES Kconfig would build every one of them in.
MODULES_LEFT_OUT='s/^\(CONFIG_[A-Za-z0-9_]*\)=m$/# \1 is not set/'

# The release names what built it: 6.12.N-HASH-xsave-sized, HASH that of the patch and the
# configuration changes, so a kernel built from other ones is rebuilt.
hash=$({ cat "$PATCH" "$FRAGMENT"; echo "$MODULES_LEFT_OUT"; } | sha256sum | cut -c1-10)
localversion=-$hash$MARK
if [ -x "$TARGET" ] && "$TARGET" --version 2>/dev/null | grep -q -- "$localversion\$"; then
  echo "install-uml.sh: $TARGET is built from this patch already ($("$TARGET" --version))"
  exit 0
fi

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# only ever run where the kernel must be built: apt installs what is missing and skips the rest
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${BUILD_DEPS[@]}" >/dev/null

work=$(mktemp -d /var/tmp/gb-uml.XXXXXX)  # the tree and its objects: about 2 GB
trap 'rm -rf "$work"' EXIT
src=$work/linux-source-$SERIES
tar -C "$work" -xf /usr/src/linux-source-$SERIES.tar.xz
patch -d "$src" -p1 --quiet --forward <"$PATCH"

zcat "$BASE_CONFIG" | sed -e "$MODULES_LEFT_OUT" >"$src/.config"
"$src/scripts/kconfig/merge_config.sh" -m -O "$src" "$src/.config" "$FRAGMENT" >/dev/null
# (it warns of Debian's 6.1 values that 6.12 reads differently, and takes its own)
make -s -C "$src" ARCH=um olddefconfig >"$work/config.log" 2>&1 || { cat "$work/config.log"; exit 1; }
# each setting of the fragment must survive olddefconfig (a renamed option would be dropped)
lost=()
while IFS= read -r line; do
  case "$line" in
    CONFIG_*) grep -qxF -- "$line" "$src/.config" || lost+=("$line") ;;
    "# CONFIG_"*" is not set")
      symbol=${line#\# }; symbol=${symbol%% *}
      grep -q "^$symbol=" "$src/.config" && lost+=("$line") ;;
  esac
done <"$FRAGMENT"
if [ "${#lost[@]}" -gt 0 ]; then
  echo "install-uml.sh: the configuration lost: ${lost[*]}" >&2
  exit 1
fi

echo "install-uml.sh: building Linux $(make -s -C "$src" kernelversion)$localversion for ARCH=um"
nice -n 10 make -C "$src" ARCH=um LOCALVERSION="$localversion" -j"$(nproc)" >"$work/build.log" 2>&1 \
  || { tail -n 30 "$work/build.log"; exit 1; }
# installed under a temporary name and renamed: a guest starting now sees the old or the new
$SUDO install -D -m 0755 "$src/linux" "$TARGET.new"
$SUDO mv -f "$TARGET.new" "$TARGET"
echo "install-uml.sh: $TARGET ($("$TARGET" --version))"
