"""The /init of an L1 machine (nested.py): the VM that a nested environment's VMM runs in.

It loads KVM (with nesting) and the 9p and virtio-console drivers, mounts the host's root
read-only over 9p at /host (so every program, library, firmware file and guest image has
its host path there) and the host's shared folder read-write at its own path in it, then
serves the host on the virtio-serial port gb.ctl, one line per command:

    run ID FILE      start the run chrooted into /host, in a session of its own: where
                     FILE ends in .argv, the program and arguments on its one line (in the
                     shell's quoting), its stderr into the file VMM_STDERR beside it;
                     else `sh FILE`. Its output (the inner VMM's console) goes to the
                     port as it comes
    runin ID FILE    the same, its standard input a FIFO that `line` writes to (else
                     /dev/null)
    side ID SCRIPT   start `sh SCRIPT` the same way, beside the run, and say nothing on the
                     port (its script writes its output and status to files)
    line ID TEXT     TEXT and a newline to that run's standard input
    kill ID          SIGKILL to every process of that run (its cgroup's, where the kernel
                     has cgroup.kill; else its process group's)

It also serves the API of the run's VMM (Firecracker's, Cloud Hypervisor's, at API_SOCKET
in the machine's tmpfs) on API_PORT of its own address, which the host's loopback forwards:
one socat for the machine's life (if the host has socat), which forks a process for each
connection that retries the socket every 5 ms until the VMM listens. A run's start then
costs no forwarder's start under emulation. When a run ends, its socket is removed, so the
next run's VMM can listen there.

and says, each on a line of its own:

    gbl1: ready UPTIME kvm=yes|no CPUS     once, when it can take commands
    gbl1: failed WHAT                      instead, when it cannot (then it powers off)
    gbl1: started ID                       the run's process exists
    gbl1: exited ID STATUS                 it has ended (STATUS as the shell's $?); after
                                           a kill, once all its processes are gone

Each run is in a cgroup of its own, where the kernel has cgroup v2 and cgroup.kill (5.14):
a kill then reaches the processes a run started in sessions of their own (Cloud
Hypervisor under script(1) is one), which a process group's kill misses, and the run's end
is told only when they have all ended and their memory is freed: the next run does not
start beside a VMM of the last one that is still tearing down its guest's memory on the
machine's one CPU. A run that ends by itself leaves its daemons (Xen's toolstack starts
xenstored and xenconsoled so) where they are.

docs/environments.md, "Inside a VM", describes what this proves and what it cannot.
"""

from __future__ import annotations

API_PORT = 4445
API_SOCKET = "/dev/shm/gb-api.sock"  # the machine's own tmpfs, as the runs see it
# A run's files in its folder (nested.py writes the first, the run the others)
RUN_ARGV = "l2.argv"             # the VMM's argv, one line in the shell's quoting
SESSION_FILE = "l2.session"      # the id of the session the run's VMM is in (its leader's pid)
VMM_STDERR = "vmm-stderr.log"
RUN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # the run's PATH
SHM = "/dev/shm"                 # the machine's own tmpfs (TMPDIR)

# The host parses the "gbl1:" lines (nested.py): change their wording only together.
# The text is part of the L1 image's content address.
_L1_INIT = r"""#!/bin/busybox sh
bb=/bin/busybox
$bb mount -t proc proc /proc
$bb mount -t devtmpfs devtmpfs /dev
$bb mount -t sysfs sysfs /sys
$bb mount -t tmpfs tmpfs /tmp
echo "gbl1: userspace"
# a cgroup per run where the kernel can kill one whole (the module's docstring)
cg=/sys/fs/cgroup/gb
{ $bb mount -t cgroup2 cgroup2 /sys/fs/cgroup && $bb mkdir $cg && [ -e $cg/cgroup.kill ]; } \
    2>/dev/null || cg=
# read -t on a FIFO that never has a line: a short wait without starting a process
$bb mkfifo /tmp/never
exec 4<>/tmp/never

# KVM for the CPU's vendor (the other module would fail to load), nested where it can.
vendor=intel
$bb grep -q AuthenticAMD /proc/cpuinfo && vendor=amd
while read -r ko; do
    case "$ko" in
        */kvm-amd.ko) [ $vendor = amd ] && { $bb insmod "$ko" nested=1 || echo "gbl1: insmod kvm-amd failed"; } ;;
        */kvm-intel.ko) [ $vendor = intel ] && { $bb insmod "$ko" nested=1 || echo "gbl1: insmod kvm-intel failed"; } ;;
        *) $bb insmod "$ko" || echo "gbl1: insmod $($bb basename "$ko" .ko) failed" ;;
    esac
done < /guestbench/modules
kvm=no
[ -c /dev/kvm ] && kvm=yes

work=
net=
for word in $($bb cat /proc/cmdline); do
    case "$word" in
        gb.work=*) work=${word#gb.work=} ;;
        gb.net=*) net=${word#gb.net=} ;;
    esac
done

# Its own user network, by which its guests' agents reach the host's peer (network workloads)
$bb ip link set lo up
if [ -n "$net" ]; then
    $bb ip link set eth0 up && $bb ip addr add "${net%,*}" dev eth0 && \
        $bb ip route add default via "${net#*,}" || echo "gbl1: no network"
fi

# cache=loose: the host's programs and images are read once per L1, not once per run
# (an L2 start took 5.5 s with it, 13 s without, here).
o=trans=virtio,version=9p2000.L,msize=524288
failed=
$bb mkdir -p /host
$bb mount -t 9p -o ro,$o,cache=loose gbroot /host || failed="mount of the host's root over 9p"
if [ -z "$failed" ]; then
    $bb mount -t proc proc /host/proc
    $bb mount -t sysfs sysfs /host/sys
    $bb mount -t devtmpfs devtmpfs /host/dev
    $bb mkdir -p /host/dev/shm /host/dev/pts
    $bb mount -t tmpfs tmpfs /host/dev/shm || echo "gbl1: no /dev/shm"
    # UML checks at start that its host delivers SIGIO on a pseudo-terminal (it reads its
    # serial lines' descriptors on that signal): without devpts it cannot, and its lines stall
    $bb mount -t devpts devpts /host/dev/pts || echo "gbl1: no /dev/pts"
    $bb mount -t 9p -o $o gbwork "/host$work" || failed="mount of the shared folder $work"
fi

# The run's VMM's API: one forwarder for the machine's life (the module's docstring)
if [ -n "$net" ] && [ -z "$failed" ]; then
    PATH=/usr/local/bin:/usr/bin:/bin $bb chroot /host socat \
        "TCP-LISTEN:@API_PORT@,bind=${net%%/*},reuseaddr,fork" \
        "UNIX-CONNECT:@API_SOCKET@,retry=2000,interval=0.005" </dev/null >/dev/null 2>&1 4<&- &
fi

port=
for name in /sys/class/virtio-ports/*/name; do
    [ "$($bb cat "$name" 2>/dev/null)" = gb.ctl ] && port=/dev/$($bb basename "$($bb dirname "$name")")
done
if [ -z "$port" ]; then
    echo "gbl1: no control port"
    $bb poweroff -f
fi
exec 3<>"$port"
if [ -n "$failed" ]; then
    echo "gbl1: failed $failed" >&3
    $bb poweroff -f
fi
echo "gbl1: ready $($bb cut -d' ' -f1 /proc/uptime) kvm=$kvm $($bb nproc)" >&3
echo "gbl1: ready kvm=$kvm"

while read -r verb id script <&3; do
    case "$verb" in
        run|runin)
            input=/dev/null
            if [ "$verb" = runin ]; then
                input=/tmp/in-$id
                $bb mkfifo "$input"
            fi
            (
                group=
                [ -n "$cg" ] && $bb mkdir "$cg/$id" && group=$cg/$id
                # read-write: the FIFO opens at once and never ends before the run does
                # the port is its output, not a descriptor of its own: a daemon it starts
                # (Xen's toolstack in a dom0) must not hold the port open past the run
                (
                    [ -z "$group" ] || echo 0 >"$group/cgroup.procs"
                    case "$script" in
                        *.argv)
                            # the VMM's argv, started from here: no shell of the host's first
                            read -r line <"/host$script"
                            eval "set -- $line"
                            export PATH=@RUN_PATH@ TMPDIR=@SHM@
                            exec $bb setsid $bb chroot /host "$@" <>"$input" >&3 \
                                2>"/host${script%/*}/@VMM_STDERR@" 3>&- 4<&-
                            ;;
                    esac
                    exec $bb setsid $bb chroot /host /bin/sh "$script" <>"$input" >&3 \
                        2>/dev/console 3>&- 4<&-
                ) &
                pid=$!
                echo $pid > /tmp/run-$id
                echo "gbl1: started $id" >&3
                # its session's leader, which a script of the host's shell writes itself
                case "$script" in *.argv) echo $pid >"/host${script%/*}/@SESSION_FILE@" ;; esac
                wait $pid
                status=$?
                if [ -n "$group" ] && [ -f /tmp/kill-$id ]; then
                    # killed: told once every process of it has ended (5 s at most: the host waits 10)
                    n=0
                    while read -r populated <"$group/cgroup.events" && \
                            [ "$populated" != "populated 0" ] && [ $n -lt 1000 ]; do
                        read -r -t 0.005 -u 4 _
                        n=$((n + 1))
                    done
                fi
                [ "$input" = /dev/null ] || $bb rm -f "$input"
                [ -S "/host@API_SOCKET@" ] && $bb rm -f "/host@API_SOCKET@"
                echo >&3
                echo "gbl1: exited $id $status" >&3
                [ -z "$group" ] || $bb rmdir "$group" 2>/dev/null  # kept while daemons live
            ) &
            ;;
        side)
            # beside a run: silent on the port, where a line of its own could land inside
            # a line of the run's console; its script keeps its output and status in files
            $bb setsid $bb chroot /host /bin/sh "$script" </dev/null >/dev/null 2>&1 3>&- 4<&- &
            echo $! > /tmp/run-$id
            ;;
        line)
            [ -p /tmp/in-$id ] && echo "$script" > /tmp/in-$id
            ;;
        kill)
            : >/tmp/kill-$id
            if [ -e "$cg/$id/cgroup.kill" ]; then
                echo 1 >"$cg/$id/cgroup.kill"
            else
                [ -f /tmp/run-$id ] && $bb kill -KILL -"$($bb cat /tmp/run-$id)" 2>/dev/null
            fi
            ;;
    esac
done
echo "gbl1: control port closed"
$bb poweroff -f
"""
L1_INIT = _L1_INIT
for _name, _value in {"API_PORT": str(API_PORT), "API_SOCKET": API_SOCKET, "RUN_PATH": RUN_PATH,
                      "SHM": SHM, "VMM_STDERR": VMM_STDERR,
                      "SESSION_FILE": SESSION_FILE}.items():
    L1_INIT = L1_INIT.replace(f"@{_name}@", _value)
