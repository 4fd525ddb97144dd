"""The /init of every guestbench image: the contract the qemu and uml environments rely on."""

from __future__ import annotations

# The host parses the "guestbench-init:" lines (docs/images.md): change their wording
# only together with the environments. The text is part of each image's content address.
INIT_SCRIPT = r"""#!/bin/busybox sh
# /init of a guestbench image (docs/images.md). No PATH and no applet links: every
# program is called as /bin/busybox APPLET so nothing depends on the environment.
bb=/bin/busybox

# First of all: the host takes this line's arrival as "the kernel handed over to userspace".
echo "guestbench-init: userspace"

# Words of /proc/cmdline must never be globbed.
set -f
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# Without /proc the agent cannot read its command line; say so. The other mounts only
# help some workloads, and devtmpfs goes before sysfs so that /dev/null exists for the
# quiet ones (redirecting to it earlier would create a plain file).
$bb mount -t proc proc /proc || echo "guestbench-init: mount proc failed"
$bb mount -t devtmpfs devtmpfs /dev 2>&-
$bb mount -t sysfs sysfs /sys 2>/dev/null
$bb mount -t tmpfs tmpfs /tmp 2>/dev/null

# The host resolved the load order with modprobe. A module that fails is reported and
# the agent still runs: the run then fails on its own output instead of hanging here.
while read -r ko; do
    $bb insmod "$ko" || echo "guestbench-init: insmod $($bb basename "$ko" .ko) failed"
done < /guestbench/modules

args=
fault=
shutdown=poweroff
linger=0
mounts=
for word in $($bb cat /proc/cmdline 2>/dev/null); do
    case "$word" in
        gb.args=*) args=${word#gb.args=} ;;
        gb.fault=*) fault=${word#gb.fault=} ;;
        gb.shutdown=*) shutdown=${word#gb.shutdown=} ;;
        gb.linger=*) linger=${word#gb.linger=} ;;
        gb.mount=*) mounts="$mounts ${word#gb.mount=}" ;;
    esac
done

# gb.mount=FSTYPE:SOURCE:TARGET:OPTIONS (repeatable): the scratch disk (ext4 on a block
# device, which may appear a moment after its driver loads), 9p and hostfs shares.
for spec in $mounts; do
    IFS=:
    set -- $spec
    unset IFS
    case "$2" in
        /dev/*) n=0; while [ ! -b "$2" ] && [ $n -lt 100 ]; do $bb usleep 50000; n=$((n+1)); done ;;
    esac
    $bb mkdir -p "$3"
    $bb mount -t "$1" ${4:+-o "$4"} "$2" "$3" || echo "guestbench-init: mount $3 failed"
done

# Test hooks for the host's crash and timeout handling.
case "$fault" in
    exit-init) echo "guestbench-init: fault exit-init"; exit 1 ;;
    hang) echo "guestbench-init: fault hang"; while :; do $bb sleep 3600; done ;;
esac

# The agent's arguments are comma-separated on the kernel command line (a space would
# end the parameter): split on commas only, and expand no * ? [ (set -f): they are a
# program's arguments (exec's argv), not file name patterns.
set -f
IFS=,
set -- $args
unset IFS
set +f
/bin/gbagent "$@"
echo "guestbench-init: agent exited with status $?"
# gb.linger=MS: the VMM lives MS more, for the host's last reading of its threads
# (inside an L1 machine, where a reading takes a while to start)
[ "$linger" -gt 0 ] 2>/dev/null && $bb usleep $((linger * 1000))

# -f: there is no init system to ask. Should poweroff fail, the script ends and the
# kernel panics, which the host sees as a crash rather than a hang.
# gb.shutdown=reboot: for VMMs that end on a guest reset but have no power-off device
# (Firecracker, kvmtool on x86: with reboot=k the reset reaches them).
if [ "$shutdown" = reboot ]; then
    $bb reboot -f
fi
$bb poweroff -f
"""
