"""guestbench's STREAM (the agent's `stream`) against McCalpin's reference stream.c, side by
side: the same compiler and flags, the same array size and NTIMES, run in rotation.

    .venv/bin/python benchmarks/stream_vs_reference.py PATH/TO/stream.c [--array-mib 128]
        [--ntimes 10] [--rounds 5] [--cflags "-O2"] [--kernels triad] [--enough 1.0]
        [--agent PATH ...]

--kernels and --enough run the agent as a campaign does (the default campaign: --kernels
triad --enough 1.0, at its array size); the reference runs its four kernels NTIMES over, and
only the kernels the agent ran are compared. --agent (repeatable) puts other gbagent
binaries in the rotation beside this tree's, e.g. one built with a change to stream.c.

The reference source is not part of guestbench: give the path of a copy of it (McCalpin's
STREAM repository, stream.c v5.10). It is compiled here with -DSTREAM_ARRAY_SIZE (elements
per array: array_mib MiB of doubles) and -DNTIMES. Prints each kernel's best rate (MB/s,
10^6 bytes per second, as both compute it) per round, then the medians, their ratio, and
the median of each round's ratio (paired: a host whose bandwidth drifts between rounds
moves both sides of a round together).
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from guestbench import agent  # noqa: E402
from guestbench.protocol import parse_line  # noqa: E402

KERNELS = ("copy", "scale", "add", "triad")
REFERENCE_LINE = re.compile(r"^(Copy|Scale|Add|Triad):\s+([0-9.]+)\s")


def reference_rates(binary: Path) -> dict[str, float]:
    output = subprocess.run([str(binary)], capture_output=True, text=True, check=True).stdout
    rates = {}
    for line in output.splitlines():
        found = REFERENCE_LINE.match(line)
        if found:
            rates[found.group(1).lower()] = float(found.group(2))
    if "Solution Validates" not in output:
        raise SystemExit(f"the reference did not validate:\n{output[-800:]}")
    return rates


def agent_rates(binary: Path, array_mib: int, ntimes: int, kernels: str,
                enough: float) -> dict[str, float]:
    output = subprocess.run([str(binary), "stream", "--array-mib", str(array_mib),
                             "--ntimes", str(ntimes), "--kernels", kernels, "--enough",
                             repr(enough)], capture_output=True, check=True).stdout
    rates = {}
    for line in output.splitlines():
        record = parse_line(line)
        if record is not None and record.type == "sample" and \
                record.body["metric"].endswith("_bandwidth"):
            rates[record.body["metric"].removesuffix("_bandwidth")] = record.body["value"]
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", type=Path, help="McCalpin's stream.c")
    parser.add_argument("--array-mib", type=int, default=128)
    parser.add_argument("--ntimes", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cflags", default="-O2")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--enough", type=float, default=0.0)
    parser.add_argument("--agent", type=Path, action="append", default=[],
                        help="another gbagent to run in the rotation (repeatable)")
    args = parser.parse_args()
    kernels = [kernel for kernel in KERNELS if kernel in args.kernels.split(",")]
    elements = args.array_mib * (1 << 20) // 8
    agents = {"guestbench": agent.path(), **{str(path): path for path in args.agent}}
    with tempfile.TemporaryDirectory() as folder:
        binary = Path(folder) / "stream_reference"
        subprocess.run(["gcc", *args.cflags.split(), f"-DSTREAM_ARRAY_SIZE={elements}",
                        f"-DNTIMES={args.ntimes}", str(args.reference), "-o", str(binary)],
                       check=True)
        names = ["reference", *agents]
        rates: dict[str, dict[str, list[float]]] = {
            name: {kernel: [] for kernel in kernels} for name in names}
        for number in range(args.rounds):  # in rotation, each starting a round in turn
            turn = number % len(names)
            for name in names[turn:] + names[:turn]:
                got = reference_rates(binary) if name == "reference" else agent_rates(
                    agents[name], args.array_mib, args.ntimes, ",".join(kernels), args.enough)
                for kernel in kernels:
                    rates[name][kernel].append(got[kernel])
                print(f"round {number + 1} {name:>10}: " + "  ".join(
                    f"{kernel} {got[kernel]:9.0f}" for kernel in kernels), flush=True)
    print(f"\n{args.array_mib} MiB per array, NTIMES={args.ntimes}, {args.rounds} rounds, "
          f"gcc {args.cflags}, agent --kernels {','.join(kernels)} --enough {args.enough:g}; "
          "best rate MB/s, medians")
    for name in agents:
        print(f"\n{name}\n{'kernel':<8}{'reference':>12}{'agent':>12}{'ratio':>8}{'paired':>8}")
        for kernel in kernels:
            theirs, ours = rates["reference"][kernel], rates[name][kernel]
            reference, measured = statistics.median(theirs), statistics.median(ours)
            paired = statistics.median(o / t for o, t in zip(ours, theirs))
            print(f"{kernel:<8}{reference:>12.0f}{measured:>12.0f}{measured / reference:>8.3f}"
                  f"{paired:>8.3f}")


if __name__ == "__main__":
    main()
