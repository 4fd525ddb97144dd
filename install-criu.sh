#!/usr/bin/env bash
# CRIU 4.1.1 from Debian's own source package (trixie's), built for this machine into
# /usr/local/sbin/criu, ahead of the distribution's /usr/sbin/criu on root's PATH. runc and
# crun checkpoint containers with CRIU, and CRIU before 4.1 fails on kernels from 6.13 on
# ("vdso: Unexpected rt vDSO area bounds": they map the vDSO's data in two areas). install.sh
# runs this only where `criu check` fails. Needs root; takes about a minute.
set -euo pipefail

VERSION=4.1.1
# the sha256 of criu_4.1.1.orig.tar.xz, whose md5 Debian's trixie Sources file lists
SHA256=f80a66cb3726bb2116266d4759ce3bcbfab7abdb6b6d430bf20dd41911717afe
URL=http://deb.debian.org/debian/pool/main/c/criu/criu_${VERSION}.orig.tar.xz
BUILD_DEPS=(build-essential pkg-config curl xz-utils libbsd-dev libcap-dev libnet1-dev
            libnl-3-dev libnftables-dev libprotobuf-c-dev libprotobuf-dev protobuf-c-compiler
            protobuf-compiler python3-protobuf)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
# only ever run where CRIU must be built: apt installs what is missing and skips the rest
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${BUILD_DEPS[@]}" >/dev/null

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
curl -fsSL "$URL" -o "$work/criu.tar.xz"
echo "$SHA256  $work/criu.tar.xz" | sha256sum -c --quiet
tar -C "$work" -xf "$work/criu.tar.xz"
echo "install-criu.sh: building CRIU $VERSION"
make -s -C "$work/criu-$VERSION" -j"$(nproc)" criu >"$work/build.log" 2>&1 \
  || { tail -n 20 "$work/build.log"; exit 1; }
$SUDO install -m 0755 "$work/criu-$VERSION/criu/criu" /usr/local/sbin/criu
/usr/local/sbin/criu check
echo "install-criu.sh: /usr/local/sbin/criu ($(/usr/local/sbin/criu --version | head -n 1))"
