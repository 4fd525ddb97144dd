"""guestbench's STREAM (the agent's `stream`) against McCalpin's reference stream.c, side by
side: the same compiler and flags, the same array size and NTIMES, run alternately.

    .venv/bin/python benchmarks/stream_vs_reference.py PATH/TO/stream.c [--array-mib 128]
        [--ntimes 10] [--rounds 5] [--cflags "-O2"] [--kernels triad] [--enough 1.0]

--kernels and --enough run the agent as a campaign does (the default campaign: --kernels
triad --enough 1.0, at its array size); the reference runs its four kernels NTIMES over, and
only the kernels the agent ran are compared.

The reference source is not part of guestbench: give the path of a copy of it (McCalpin's
STREAM repository, stream.c v5.10). It is compiled here with -DSTREAM_ARRAY_SIZE (elements
per array: array_mib MiB of doubles) and -DNTIMES. Prints each kernel's best rate (MB/s,
10^6 bytes per second, as both compute it) per round, then the medians and their ratio.
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


def agent_rates(array_mib: int, ntimes: int, kernels: str, enough: float) -> dict[str, float]:
    output = subprocess.run([str(agent.path()), "stream", "--array-mib", str(array_mib),
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
    args = parser.parse_args()
    kernels = [kernel for kernel in KERNELS if kernel in args.kernels.split(",")]
    elements = args.array_mib * (1 << 20) // 8
    with tempfile.TemporaryDirectory() as folder:
        binary = Path(folder) / "stream_reference"
        subprocess.run(["gcc", *args.cflags.split(), f"-DSTREAM_ARRAY_SIZE={elements}",
                        f"-DNTIMES={args.ntimes}", str(args.reference), "-o", str(binary)],
                       check=True)
        ours: dict[str, list[float]] = {kernel: [] for kernel in kernels}
        theirs: dict[str, list[float]] = {kernel: [] for kernel in kernels}
        for number in range(args.rounds):  # alternating, starting with each in turn
            order = [("reference", binary), ("guestbench", None)]
            for name, path in (order if number % 2 == 0 else order[::-1]):
                rates = reference_rates(path) if path else agent_rates(
                    args.array_mib, args.ntimes, ",".join(kernels), args.enough)
                for kernel in kernels:
                    (theirs if path else ours)[kernel].append(rates[kernel])
                print(f"round {number + 1} {name:>10}: " + "  ".join(
                    f"{kernel} {rates[kernel]:9.0f}" for kernel in kernels), flush=True)
    print(f"\n{args.array_mib} MiB per array, NTIMES={args.ntimes}, {args.rounds} rounds, "
          f"gcc {args.cflags}, agent --kernels {','.join(kernels)} --enough {args.enough:g}; "
          "best rate MB/s, medians")
    print(f"{'kernel':<8}{'reference':>12}{'guestbench':>12}{'ratio':>8}")
    for kernel in kernels:
        reference, measured = statistics.median(theirs[kernel]), statistics.median(ours[kernel])
        print(f"{kernel:<8}{reference:>12.0f}{measured:>12.0f}{measured / reference:>8.3f}")


if __name__ == "__main__":
    main()
