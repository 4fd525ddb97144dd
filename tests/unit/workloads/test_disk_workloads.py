"""fio, metadata and dbench: command lines, and samples parsed from real outputs recorded here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from guestbench.environments.fullsystem import guestdisk
from guestbench.environments.kinds import qemu
from guestbench.environments.kinds.qemu import QemuSpec
from guestbench.workloads import CATALOGUE
from guestbench.workloads.base import Derived, OutputError, RunOutput
from guestbench.workloads.disk import FIO_FILE, fio_command, metadata_command

DATA = Path(__file__).parents[1] / "data" / "tools"


def output(stdout: str, stderr: str = "") -> RunOutput:
    return RunOutput(samples=[], stdout=stdout, stderr=stderr, records=[], artifacts={})


def derived(name: str, text: str, **given) -> dict[str, tuple[str, float]]:
    return {metric: (unit, value) for metric, unit, value in derivation(name, text, **given).samples}


def derivation(name: str, text: str, **given) -> Derived:
    workload = CATALOGUE[name]
    params = workload.resolve(given, None)
    made = workload.derive(params, output(text))
    return made if isinstance(made, Derived) else Derived(made)


def recorded(name: str) -> str:
    return (DATA / f"{name}.native.txt").read_text()


def test_seq_write_gives_bandwidth_in_mb_per_s_from_bw_bytes():
    text = recorded("fio_seq_write")
    job = json.loads(text[text.index("{"):])["jobs"][0]
    samples = derived("fio_seq_write", text)
    assert samples["bandwidth"] == ("MB/s", pytest.approx(job["write"]["bw_bytes"] / 1e6))
    assert samples["cpu_sys"] == ("%", pytest.approx(job["sys_cpu"]))
    assert CATALOGUE["fio_seq_write"].primary_metric == "bandwidth"


def test_random_read_gives_iops_and_latency_percentiles_in_us():
    text = recorded("fio_rand_read")
    read = json.loads(text[text.index("{"):])["jobs"][0]["read"]
    samples = derived("fio_rand_read", text)
    assert samples["iops"] == ("IOPS", pytest.approx(read["iops"]))
    assert samples["lat_p50"] == ("us", pytest.approx(read["clat_ns"]["percentile"]["50.000000"] / 1e3))
    assert samples["lat_p99"][1] >= samples["lat_p50"][1]


def test_random_write_reads_the_write_side():
    samples = derived("fio_rand_write", recorded("fio_rand_write"))
    assert samples["iops"][1] > 0 and samples["lat_p99"][1] >= samples["lat_p50"][1]


def test_fsync_gives_fsync_latency_from_the_sync_section():
    text = recorded("fio_fsync")
    sync = json.loads(text)["jobs"][0]["sync"]
    samples = derived("fio_fsync", text)
    assert samples["fsync_p50"] == ("us", pytest.approx(sync["lat_ns"]["percentile"]["50.000000"] / 1e3))
    assert samples["fsyncs"][0] == "ops/s" and samples["fsyncs"][1] > 0


def test_error_lines_before_the_json_are_skipped():
    text = "fio: some warning on stdout\n" + recorded("fio_seq_write")
    assert derived("fio_seq_write", text)["bandwidth"][1] > 0


def test_a_job_error_fails_with_fio_s_own_message():
    report = json.loads(recorded("fio_seq_write"))
    report["jobs"][0]["error"] = 22
    text = ("fio: looks like your file system does not support direct=1/buffered=0\n"
            + json.dumps(report))
    with pytest.raises(OutputError, match="errno 22.*does not support direct"):
        derived("fio_seq_write", text)


@pytest.mark.parametrize("text", ["", "fio: engine libaio not loadable\n", "{ not json"])
def test_missing_or_broken_json_fails(text):
    with pytest.raises(OutputError):
        derived("fio_seq_write", text)


def test_a_job_that_moved_nothing_fails():
    report = json.loads(recorded("fio_seq_write"))
    for side in ("read", "write"):
        report["jobs"][0][side].update(io_bytes=0, total_ios=0)
    with pytest.raises(OutputError, match="moved no data"):
        derived("fio_seq_write", json.dumps(report))


def test_metadata_gives_files_per_second_for_each_phase():
    text = recorded("metadata")
    jobs = {job["jobname"]: job for job in json.loads(text)["jobs"]}
    samples = derived("metadata", text)
    for phase in ("create", "stat", "delete"):
        assert samples[phase] == ("files/s", pytest.approx(jobs[phase]["read"]["iops"]))


def test_metadata_phases_shorter_than_fios_resolution_are_flagged_too_fast():
    # recorded here: 2000 files created in 7 ms and stat'ed in 5 ms of fio's runtime (whole
    # milliseconds, so each rate may be off by 15-20%); deleted in 191 ms
    made = derivation("metadata", recorded("metadata"))
    assert made.flags == ["too-fast:create", "too-fast:stat"]
    report = json.loads(recorded("metadata"))
    for job in report["jobs"]:
        job["read"]["runtime"] = 500
    assert derivation("metadata", json.dumps(report)).flags == []


def test_metadata_without_a_phase_fails():
    report = json.loads(recorded("metadata"))
    report["jobs"] = [job for job in report["jobs"] if job["jobname"] != "stat"]
    with pytest.raises(OutputError, match="no stat job"):
        derived("metadata", json.dumps(report))


def test_dbench_throughput_line():
    samples = derived("dbench", recorded("dbench"))
    assert samples["throughput"] == ("MB/s", 659.105)
    assert samples["max_latency"] == ("ms", 5.923)


def test_dbench_client_count_must_match_and_failure_says_what_dbench_said():
    with pytest.raises(OutputError, match="ran 2 clients, 4"):
        derived("dbench", recorded("dbench"), clients=4)
    with pytest.raises(OutputError, match="failed to use the barrier semaphore"):
        derived("dbench", "failed to use the barrier semaphore in child 3\n")


def test_fio_commands_run_in_the_scratch_folder_with_psync_and_json():
    params = CATALOGUE["fio_seq_read"].resolve({"size_mib": 64, "runtime_s": 3.0}, None)
    argv = fio_command("fio_seq_read", params)
    assert argv[0] == "fio" and f"--filename={FIO_FILE}" in argv
    assert {"--ioengine=psync", "--output-format=json", "--size=64M", "--runtime=3",
            "--rw=read", "--bs=1M", "--direct=0"} <= set(argv)
    # every argument can travel on a guest kernel's command line (no commas or spaces)
    for name in ("fio_seq_write", "fio_rewrite", "fio_seq_read", "fio_rand_read",
                 "fio_rand_write", "fio_fsync"):
        workload = CATALOGUE[name]
        for arg in workload.agent_args(workload.resolve({}, None)):
            assert "," not in arg and " " not in arg, (name, arg)
    for arg in metadata_command(CATALOGUE["metadata"].resolve({}, None)):
        assert "," not in arg and " " not in arg


def test_read_jobs_wait_for_their_copy_to_settle_with_fios_startdelay():
    # a fresh copy is read at once only when asked: fio's own option, so a hand-run
    # fio command with the same arguments reproduces the figure
    for name in ("fio_seq_read", "fio_rand_read"):
        workload = CATALOGUE[name]
        assert "--startdelay=3" in fio_command(name, workload.resolve({}, None))
        assert "--startdelay=0.5" in fio_command(name, workload.resolve({"settle_s": 0.5}, None))
        assert not any(arg.startswith("--startdelay")
                       for arg in fio_command(name, workload.resolve({"settle_s": 0}, None)))
        for bad in (-1, 601, "3"):
            with pytest.raises(ValidationError, match="settle_s"):
                workload.resolve({"settle_s": bad}, None)
    for name in ("fio_seq_write", "fio_rewrite", "fio_rand_write", "fio_fsync"):
        workload = CATALOGUE[name]
        assert not any(arg.startswith("--startdelay")
                       for arg in fio_command(name, workload.resolve({}, None)))
        with pytest.raises(ValidationError, match="settle_s"):
            workload.resolve({"settle_s": 1}, None)


def test_read_jobs_read_a_prepared_uncached_file(tmp_path):
    workload = CATALOGUE["fio_rand_read"]
    params = workload.resolve({"size_mib": 2}, None)
    needs = workload.job_needs(params, tmp_path)
    prepared = needs.scratch_files / FIO_FILE
    assert prepared.stat().st_size == 2 * 2**20 and needs.uncache_files
    first = prepared.read_bytes()
    assert workload.job_needs(params, tmp_path).scratch_files == needs.scratch_files  # made once
    assert first[:8] == (0).to_bytes(8, "little") and first[2**20:2**20 + 8] == (1).to_bytes(8, "little")
    assert CATALOGUE["fio_seq_write"].job_needs(
        CATALOGUE["fio_seq_write"].resolve({}, None), tmp_path).scratch_files is None


def test_disk_bus_must_exist_on_the_machine():
    with pytest.raises(ValidationError, match="ide does not exist on machine microvm"):
        QemuSpec(name="q", machine="microvm", disk_bus="ide")
    assert QemuSpec(name="q", machine="pc", disk_bus="ide").disk_bus == "ide"
    with pytest.raises(ValidationError):
        QemuSpec(name="q", disk_cache="sometimes")


def test_qemu_disk_arguments_per_bus(tmp_path):
    image = tmp_path / "d.qcow2"
    scsi = qemu.bus("microvm", "virtio-scsi")
    args = qemu.disk_args(scsi, 0, image, "qcow2", "none")
    assert args[:2] == ["-device", "virtio-scsi-device,id=scsi0"]
    assert f"if=none,id=disk0,file={image},format=qcow2,cache=none" in args
    assert qemu.guest_device(scsi, 1) == "/dev/sdb"
    ide = qemu.disk_args(qemu.bus("pc", "ide"), 1, image, "raw", "unsafe")
    assert "ide-hd,drive=disk1,bus=ide.1" in ide
    assert qemu.guest_device(qemu.bus("q35", "virtio-blk"), 0) == "/dev/vda"


def test_scratch_disk_is_ext4_holding_the_files(tmp_path):
    from guestbench.environments.base import JobNeeds
    files = tmp_path / "files"
    files.mkdir()
    (files / "hello.txt").write_text("hi\n")
    work = tmp_path / "work"
    work.mkdir()
    image = guestdisk.make_scratch_disk(work, JobNeeds(scratch=True, scratch_files=files), 64)
    assert image.stat().st_size == 65 * 2**20  # grown to 64 MiB of slack + the files (1 MiB)
    listing = __import__("subprocess").run(["debugfs", "-R", "cat /hello.txt", str(image)],
                                           capture_output=True, text=True).stdout
    assert listing == "hi\n"
    qcow = guestdisk.make_scratch_disk(work, JobNeeds(scratch=True), 64, "qcow2")
    assert qcow.read_bytes()[:4] == b"QFI\xfb" and not (work / "scratch.raw").exists()
