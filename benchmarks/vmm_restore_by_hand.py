#!/usr/bin/env python3
"""A Firecracker or Cloud Hypervisor restore as guestbench times it, against the same restore
run by hand with the VMM's own tools, side by side, nested in an L1 guest under TCG.

    .venv/bin/python benchmarks/vmm_restore_by_hand.py [PRESET ...]
        (default: firecracker-nested cloud-hypervisor-nested)

For each preset, ROUNDS rounds alternate a guestbench campaign of `restore` (RESTORES
restores of one image, dirty_mib = 64) with RESTORES restores by hand, and the medians of
each side are compared. By hand runs in an L1 machine of the same shape (booted through
guestbench's nested module: the test bed, not what is measured) as one bash script:

- the instance is booted from the campaign's own logs: Firecracker from `firecracker
  --api-sock` and the requests of its `saved/api.log` replayed with `curl --unix-socket`;
  Cloud Hypervisor from the VMM's command line in `saved/command`;
- saved with `curl` (`PATCH /vm` Paused, `PUT /snapshot/create`) or `ch-remote` (`pause`,
  `snapshot file://DIR`) into a folder the machine shares;
- each restore timed by the machine's clock (`date +%s%N`) from spawning the VMM to the
  restored agent's `restored_token` line on its output: `curl PUT /snapshot/load` with
  `resume_vm`, or `ch-remote restore` and `resume` (Cloud Hypervisor under `script`, as its
  serial port reads input only from a terminal), then "go" into its console;
- each VMM killed after its restore and waited for until it has ended, with what it
  started (script's Cloud Hypervisor, in a session of its own), as guestbench's stop of a
  run in the L1 machine waits for its cgroup to empty: no restore starts beside the last
  one's VMM still freeing its guest's memory.

The machine's clock is checked against the host's over the whole script (printed as a
ratio), and the start of the API's client there is timed apart (`client_start_ms`): under
emulation a process's start costs what a host-side client does not. Cloud Hypervisor's
restore by hand starts `ch-remote` twice (restore, resume): its ratio is also given against
by hand less those starts (`ratio_less_client`). Firecracker's takes turns: a restore
whose curl starts once the socket is there (`by_hand_ms`), then one whose curl was started
before the clock and waits, blocked reading its request's body from a FIFO, as a client
already running does (`by_hand_client_running_ms`, `ratio_client_running`); curl reads
`-d @-` before it connects, which the script checks in /proc before the clock starts. Run
it on a quiet host; it prints a JSON line and a sentence per preset.
"""

from __future__ import annotations

import json
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from snapshot_by_hand import RESTORES, ROUNDS, guestbench_round  # noqa: E402

from guestbench import environments  # noqa: E402
from guestbench.environments.fullsystem import nested  # noqa: E402

SCRIPT_S = 1800.0
CLIENT_STARTS = {"cloud-hypervisor": 2}  # ch-remote restore, resume: per restore by hand

COMMON = r"""
set -u -f
DIR=$1; N=$2
echo "clock $(date +%s%N)"
# the FIFOs in the machine's own tmpfs (its 9p share makes none), the image in the share
FIFOS=$(mktemp -d /dev/shm/byhand-XXXXXX); cd "$FIFOS"
cp "$DIR"/requests "$DIR"/argv . 2>/dev/null
until_line() {  # reads the VMM's output FIFO until a line holds $1
    while IFS= read -r line; do case $line in *"$1"*) return 0;; esac; done <&4
    return 1
}
fifos() { rm -f in out; mkfifo in out; }  # made before a restore's time starts
start_vmm() {  # $@: the VMM's argv; its stdin and stdout are FIFOs, held on fds 3 and 4
    "$@" <in >out 2>>vmm.err 6>&- 7<&- & VMM=$!  # not curl's FIFOs: its body would never end
    exec 3>in 4<out
}
stop_vmm() {  # the VMM and what it started (script's Cloud Hypervisor), each until it ended
    kids=$(cat /proc/$VMM/task/*/children 2>/dev/null)
    kill -9 $VMM $kids 2>/dev/null; wait $VMM 2>/dev/null
    for kid in $kids; do ended $kid; done
    exec 3>&- 4<&-
}
ended() {  # until process $1 is gone or a zombie (its memory freed)
    local state
    while { read -r _ _ state _ </proc/$1/stat; } 2>/dev/null && [ "$state" != Z ]; do snooze; done
}
mkfifo never; exec 5<>never  # read -t on it: a 5 ms sleep without a process
snooze() { read -r -t 0.005 -u 5 || :; }
tool_start() {  # what starting the API's client costs here: 5 runs of "$@", each timed
    for i in 1 2 3 4 5; do
        began=${EPOCHREALTIME/./}; "$@" >/dev/null 2>&1; ended=${EPOCHREALTIME/./}
        echo "tool $(( ended - began ))"
    done
}
wait_socket() { until [ -S "$1" ]; do snooze; done; }
"""

FIRECRACKER = COMMON + r"""
API=/dev/shm/byhand.sock
curl_api() { curl -sS --fail-with-body --unix-socket $API -X "$1" -H 'Content-Type: application/json' \
    ${3:+-d "$3"} "http://localhost$2" >&2; }
rm -f $API; fifos; start_vmm firecracker --api-sock $API --level warning
wait_socket $API; until curl_api GET /version; do snooze; done
while IFS= read -r request; do
    set -- $request; method=$1; path=$2; body=${request#* * }
    curl_api "$method" "$path" "$body" || exit 1
done < requests
until_line snapshot_ready
curl_api PATCH /vm '{"state": "Paused"}'
curl_api PUT /snapshot/create "{\"snapshot_type\": \"Full\", \"snapshot_path\": \"$DIR/vmstate\", \"mem_file_path\": \"$DIR/memory\"}"
stop_vmm
tool_start curl --version
LOAD="{\"snapshot_path\": \"$DIR/vmstate\", \"mem_backend\": {\"backend_type\": \"File\", \"backend_path\": \"$DIR/memory\"}, \"resume_vm\": true}"
load_curl() {  # the load's curl: its body from stdin, its status line on stdout, its own time
    exec curl -sS --fail-with-body --unix-socket $API -X PUT -H 'Content-Type: application/json' \
        -d @- -o load.body -w '%{http_code} %{time_total}\n' http://localhost/snapshot/load
}
restore() {  # $1: cold (curl started once the socket is there) or warm (started before the
             # clock, blocked reading its request's body: a client already running, as a
             # host-side one is)
    rm -f $API body answer; fifos; mkfifo body answer
    if [ $1 = warm ]; then
        load_curl <body >answer 2>>curl.err 3>&- 4<&- & CURL=$!
        exec 6>body 7<answer
        until { read -r call fd _ </proc/$CURL/syscall; } 2>/dev/null && [ "$call $fd" = "0 0x0" ] \
            && [ "$(readlink /proc/$CURL/exe)" = "$(command -v curl)" ]; do
            kill -0 $CURL 2>/dev/null || { cat curl.err >&2; echo "curl ended unasked" >&2; exit 1; }
            snooze
        done
    fi
    began=${EPOCHREALTIME/./}
    start_vmm firecracker --api-sock $API --level warning
    wait_socket $API; socket=${EPOCHREALTIME/./}
    if [ $1 = cold ]; then
        load_curl <body >answer 2>>curl.err 3>&- 4<&- & CURL=$!
        exec 6>body 7<answer
    fi
    printf '%s' "$LOAD" >&6; exec 6>&-
    read -r -t 60 code own <&7 || { echo "no answer to the load in 60 s" >&2; exit 1; }
    loaded=${EPOCHREALTIME/./}; exec 7<&-
    case $code in 2??) ;; *) cat load.body curl.err >&2; exit 1;; esac
    own=$(( 10#${own/./} ))  # curl's own time of the request, us
    echo go >&3
    until_line restored_token
    ended=${EPOCHREALTIME/./}
    wait $CURL
    echo "steps $1_socket $(( socket - began )) $1_load $(( loaded - socket )) $1_request $own $1_token $(( ended - loaded ))"
    echo "$1 $(( ended - began ))"
    stop_vmm
}
for i in $(seq "$N"); do
    restore cold
    restore warm
done
"""

CLOUD_HYPERVISOR = COMMON + r"""
API=/dev/shm/byhand.sock
rm -f $API; fifos; eval "start_vmm $(cat argv)"
wait_socket $API; until ch-remote --api-socket $API ping >/dev/null 2>&1; do snooze; done
until_line snapshot_ready
ch-remote --api-socket $API pause && ch-remote --api-socket $API snapshot "file://$DIR/image" || exit 1
stop_vmm
tool_start ch-remote --version
for i in $(seq "$N"); do
    rm -f $API; fifos
    began=${EPOCHREALTIME/./}
    start_vmm script -qfec "cloud-hypervisor --api-socket path=$API" /dev/null
    wait_socket $API; socket=${EPOCHREALTIME/./}
    ch-remote --api-socket $API restore "source_url=file://$DIR/image" || exit 1
    loaded=${EPOCHREALTIME/./}
    ch-remote --api-socket $API resume || exit 1
    resumed=${EPOCHREALTIME/./}
    echo "steps socket $(( socket - began )) load $(( loaded - socket )) resume $(( resumed - loaded ))"
    echo go >&3
    until_line restored_token
    ended=${EPOCHREALTIME/./}
    echo "took $(( ended - began ))"
    stop_vmm
done
"""


def by_hand(preset: str, logs: Path, machine: nested.Machine
            ) -> tuple[list[float], float, float, list[float]]:
    """RESTORES restores by hand in the machine: their ms; the machine's clock rate against
    the host's over the script (its seconds over the host's: a little under 1, as the side
    command's start and end cross the control port); and the median ms of starting the
    API's client there (`curl --version`, `ch-remote --version`), which each restore by
    hand pays once (curl) or twice (ch-remote) and guestbench, a client on the host, not;
    and, for Firecracker, each restore less what its curl took beyond curl's own time of the
    request (`-w %{time_total}`): its start and end, measured in that very restore."""
    folder = machine.workdir()
    (folder / "image").mkdir()
    if preset.startswith("firecracker"):
        requests = []  # the boot's, up to InstanceStart (the save's follow in the log)
        for line in (logs / "saved" / "api.log").read_text().splitlines():
            request = line.rsplit(" -> ", 1)[0]
            if not request.startswith("GET "):
                requests.append(request)
            if "InstanceStart" in request:
                break
        (folder / "requests").write_text("\n".join(requests) + "\n")
        script = FIRECRACKER
    else:
        vmm = shlex.split((logs / "saved" / "command").read_text())
        vmm[vmm.index("--api-socket") + 1] = "path=/dev/shm/byhand.sock"
        (folder / "argv").write_text(shlex.join(vmm) + "\n")
        script = CLOUD_HYPERVISOR
    (folder / "by-hand.sh").write_text(script)
    began = time.monotonic()
    status, said = machine.side(f"bash {shlex.quote(str(folder / 'by-hand.sh'))} "
                                f"{shlex.quote(str(folder))} {RESTORES} "
                                f"2>{shlex.quote(str(folder / 'script.err'))}; ended=$?; "
                                f"echo clock $(date +%s%N); exit $ended", SCRIPT_S)
    host_s = time.monotonic() - began
    clocks = [int(line.split()[1]) for line in said.splitlines() if line.startswith("clock ")]
    rate = (clocks[-1] - clocks[0]) / 1e9 / host_s if len(clocks) == 2 else float("nan")
    def values(word: str) -> list[float]:
        return [int(line.split()[1]) / 1000 for line in said.splitlines()
                if line.startswith(word + " ")]
    took, tool, warm = values("took") or values("cold"), values("tool"), values("warm")
    by_step: dict[str, list[int]] = {}
    for line in said.splitlines():
        if line.startswith("steps "):
            words = line.split()[1:]
            for name, value in zip(words[::2], words[1::2]):
                by_step.setdefault(name, []).append(int(value))
    if by_step:
        print("  by hand, its steps' medians (ms): " + " ".join(
            f"{name} {statistics.median(values) / 1000:.0f}" for name, values in by_step.items()),
            file=sys.stderr)
    if status != 0 or len(took) != RESTORES:
        errors = (folder / "script.err").read_text()[-800:] if (folder / "script.err").exists() \
            else ""
        raise RuntimeError(f"by hand: status {status}: {said[-800:]} {errors}")
    return took, rate, statistics.median(tool), warm


def main() -> None:
    presets = sys.argv[1:] or ["firecracker-nested", "cloud-hypervisor-nested"]
    for preset in presets:
        spec = environments.preset_spec(preset)
        shape = nested.Shape("tcg", spec.memory_mib + nested.L1_EXTRA_MIB, 1)
        ours, theirs, rates, tools, warm = [], [], [], [], []
        steps: dict[str, list[float]] = {}
        for _ in range(ROUNDS):
            with tempfile.TemporaryDirectory(prefix="vmm-by-hand-") as folder:
                values, logs = guestbench_round(preset, Path(folder), steps)
                ours += values
                machine = nested.acquire(shape)
                try:
                    took, rate, tool, warm_ms = by_hand(preset, logs, machine)
                finally:
                    nested.release(machine)
                theirs += took
                rates.append(rate)
                tools.append(tool)
                warm += warm_ms
        print("  guestbench, its steps' medians (ms): " + " ".join(
            f"{name.removeprefix('restore_')} {statistics.median(values):.0f}"
            for name, values in steps.items()), file=sys.stderr)
        ours_ms, theirs_ms = statistics.median(ours), statistics.median(theirs)
        client_ms = statistics.median(tools)
        result = {"preset": preset, "guestbench_ms": round(ours_ms, 1),
                  "by_hand_ms": round(theirs_ms, 1), "restores": [len(ours), len(theirs)],
                  "ratio": round(ours_ms / theirs_ms, 3),
                  "machine_clock_rate": [round(rate, 4) for rate in rates],
                  "client_start_ms": round(client_ms, 1)}
        sentence = (f"{preset}: guestbench restore median {ours_ms:.1f} ms ({len(ours)} "
                    f"restores), by hand {theirs_ms:.1f} ms ({len(theirs)}), guestbench / by "
                    f"hand {ours_ms / theirs_ms:.3f}")
        if warm:  # Firecracker: its client started before the clock, in each other restore
            warm_ms = statistics.median(warm)
            result.update(by_hand_client_running_ms=round(warm_ms, 1),
                          ratio_client_running=round(ours_ms / warm_ms, 3))
            sentence += (f"; by hand with curl already running {warm_ms:.1f} ms "
                         f"({len(warm)}), guestbench / that {ours_ms / warm_ms:.3f}")
        else:
            less_ms = theirs_ms - CLIENT_STARTS[spec.kind] * client_ms
            result.update(by_hand_less_client_ms=round(less_ms, 1),
                          ratio_less_client=round(ours_ms / less_ms, 3))
            sentence += (f"; by hand less its client's {CLIENT_STARTS[spec.kind]} start(s) "
                         f"{less_ms:.1f} ms, guestbench / that {ours_ms / less_ms:.3f}")
        print(json.dumps(result))
        print(sentence)


if __name__ == "__main__":
    main()
