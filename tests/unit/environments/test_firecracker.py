"""The firecracker kind against a stand-in that serves Firecracker's HTTP API
(tests/support/fake_vmm.py): the requests a run sends, in order, and what a refusal gives;
the snapshot's requests; inside a VM, socat beside it. The real Firecracker runs in
tests/integration/test_api_vmms_real.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guestbench import environments, images
from guestbench.environments.base import GuestStartError, Job
from guestbench.environments.fullsystem import api_vmm, l1_init, nested
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.fullsystem.vmm_api import Api, ApiRefused
from guestbench.environments.kinds import firecracker
from guestbench.process import proc, threads
from guestbench.report.tables import platform

IMAGE = images.Image("id", Path("/boot/vmlinuz-6.1"), "6.1", Path("/cache/i.cpio"), (), (), None)
def vmm(preset: str = "firecracker", **options) -> firecracker.Firecracker:
    """The preset's environment with options changed, its image a stand-in (nothing boots)."""
    spec = environments.preset_spec(preset)
    environment = environments.create(spec.model_copy(update=options))
    environment.image = IMAGE
    environment.boot_kernel = Path("/cache/vmlinux")
    return environment


def job() -> Job:
    return Job("getpid", Path("/gbagent"), ("--values", "3", "getpid"))


def deadline() -> int:
    return proc.now_ns() + int(30e9)


def test_a_run_configures_the_guest_through_the_api_then_starts_it(fake, tmp_path) -> None:
    options, requests, _ = fake
    environment = vmm(memory_mib=256, vcpus=2, kernel_args=("loglevel=4",), **options)
    guest = environment.start(job(), tmp_path / "logs", deadline())
    try:
        said = requests()
        assert said[0]["argv"][0] == "--api-sock"
        assert said[0]["argv"][2:] == ["--level", "warning"]  # its info lines off the console
        calls = [(r["method"], r["path"]) for r in said[1:]]
        assert calls == [("GET", "/version"), ("PUT", "/boot-source"),
                         ("PUT", "/machine-config"), ("PUT", "/actions")]
        boot = said[2]["body"]
        assert boot["kernel_image_path"] == "/cache/vmlinux"
        assert boot["initrd_path"] == "/cache/i.cpio"
        words = boot["boot_args"].split()
        # the image resets at its end (Firecracker has no power-off), the job comes last
        assert "reboot=k" in words and "gb.shutdown=reboot" in words
        assert words[-2] == "loglevel=4" and words[-1].startswith("gb.args=")
        assert words[-1].endswith(",--values,3,getpid")
        assert said[3]["body"] == {"vcpu_count": 2, "mem_size_mib": 256,
                                   "track_dirty_pages": False}
        assert said[4]["body"] == {"action_type": "InstanceStart"}
        assert set(guest.start_phases()) == {"api_ready", "configure"}
        logged = (tmp_path / "logs" / "api.log").read_text().splitlines()
        assert logged[0].startswith("GET /version  -> 200 in ")
        assert logged[-1].startswith('PUT /actions {"action_type": "InstanceStart"} -> 204 in ')
    finally:
        guest.stop()
    assert not Path(said[0]["argv"][1]).parent.exists()  # the run's folder, its socket


def test_a_refused_config_fails_the_start_with_firecracker_s_words(fake, tmp_path) -> None:
    options, requests, replies = fake
    replies({"PUT /machine-config": [400, {"fault_message": "The memory size (MiB) is "
                                                           "either 0, or not a multiple"}]})
    with pytest.raises(GuestStartError) as refused:
        vmm(**options).start(job(), tmp_path / "logs", deadline())
    assert str(refused.value).startswith(
        "Firecracker refused PUT /machine-config: 400 The memory size (MiB) is either 0")
    said = requests()
    assert ("PUT", "/actions") not in [(r.get("method"), r.get("path")) for r in said]
    assert not Path(said[0]["argv"][1]).parent.exists()  # stopped, its folder gone


def test_a_vmm_that_ends_before_its_api_answers_fails_the_start(tmp_path) -> None:
    program = tmp_path / "gone"
    program.write_text("#!/bin/sh\necho 'Error: KVM is not there' >&2\nexit 1\n")
    program.chmod(0o755)
    with pytest.raises(GuestStartError, match="ended before its API answered.*KVM is not"):
        vmm(binary=str(program)).start(job(), tmp_path / "logs", deadline())


def test_the_run_s_disk_is_a_drive(fake, tmp_path) -> None:
    options, requests, _ = fake
    devices = GuestDevices()
    devices.args.append("/run/disk.img")
    requests_for = vmm(**options).configure([], devices)
    server = api_vmm.Api("Firecracker", tmp_path / "none.sock")
    sent: list = []
    server.call = lambda method, path, body=None, **_: sent.append((method, path, body))
    requests_for(server)
    assert ("PUT", "/drives/disk0", {"drive_id": "disk0", "path_on_host": "/run/disk.img",
                                     "is_root_device": False, "is_read_only": False}) in sent
    assert sent[-1][1] == "/actions"


def test_a_snapshot_pauses_then_creates_and_a_restore_loads_and_resumes(fake, tmp_path) -> None:
    options, requests, _ = fake
    environment = vmm(snapshot_type="Diff", **options)
    guest = environment.start(job(), tmp_path / "logs", deadline())
    try:
        steps = environment.save_requests(guest.api, tmp_path / "image")
        assert set(steps) == {"pause", "write"}
        restored = environment.restore_requests(guest.api, tmp_path / "image")
        assert set(restored) == {"load"}
    finally:
        guest.stop()
    said = [r for r in requests() if "method" in r]
    assert said[2]["body"]["track_dirty_pages"] is True  # a diff needs tracking from the start
    assert (said[-3]["method"], said[-3]["path"], said[-3]["body"]) == (
        "PATCH", "/vm", {"state": "Paused"})
    assert said[-2]["body"] == {"snapshot_type": "Diff",
                                "snapshot_path": str(tmp_path / "image" / "vmstate"),
                                "mem_file_path": str(tmp_path / "image" / "memory")}
    assert said[-1]["path"] == "/snapshot/load" and said[-1]["body"] == {
        "snapshot_path": str(tmp_path / "image" / "vmstate"),
        "mem_backend": {"backend_type": "File",
                        "backend_path": str(tmp_path / "image" / "memory")},
        "resume_vm": True}


def test_an_error_reply_is_told_in_the_vmm_s_words() -> None:
    error = ApiRefused("Firecracker", "PUT", "/snapshot/load", 400, "Cannot load: bad file")
    assert str(error) == "Firecracker refused PUT /snapshot/load: 400 Cannot load: bad file"
    from guestbench.environments.fullsystem.vmm_api import said_of
    assert said_of(b'{"fault_message": "no\\n  such file"}') == "no such file"
    assert said_of(b"Error from API: InvalidState") == "Error from API: InvalidState"


def test_the_api_s_absence_is_told_with_what_was_tried(tmp_path) -> None:
    api = Api("Firecracker", tmp_path / "nobody.sock")
    with pytest.raises(GuestStartError, match="Firecracker's API did not answer GET /version"):
        api.call("GET", "/version")


def test_inside_a_vm_the_vmm_serves_the_machine_s_forwarded_socket(tmp_path) -> None:
    """The L1 machine's socat, started with it, carries the API: the run's argv is the
    VMM's own, with no forwarder to start under emulation before it."""
    environment = vmm(inside="tcg", binary="/opt/fc/firecracker")
    environment.machine = type("M", (), {"api_address": ("127.0.0.1", 5555)})()
    socket = environment.socket(tmp_path / "run-x")
    assert socket == l1_init.API_SOCKET and socket.startswith(f"{nested.L1_SHM}/")
    argv = environment.vmm_argv(socket, tmp_path / "run-x", [], GuestDevices())
    assert argv[:3] == ["/opt/fc/firecracker", "--api-sock", socket]
    assert environment.api(tmp_path / "run-x").address == ("127.0.0.1", 5555)
    environment.machine = None


def test_the_l1_machine_forwards_its_api_port_and_frees_the_socket_after_each_run() -> None:
    init = l1_init.L1_INIT
    assert "@API_" not in init  # every placeholder filled in
    forwarder = init[init.index("chroot /host socat"):]
    assert f'"TCP-LISTEN:{l1_init.API_PORT},bind=${{net%%/*}},reuseaddr,fork"' in forwarder
    assert f'"UNIX-CONNECT:{l1_init.API_SOCKET},retry=2000,interval=0.005"' in forwarder
    after_the_run = init[init.index("status=$?"):init.index("gbl1: exited")]
    assert f'$bb rm -f "/host{l1_init.API_SOCKET}"' in after_the_run


def test_without_the_binary_it_is_unavailable_with_the_fix(tmp_path) -> None:
    answer = vmm(binary=str(tmp_path / "firecracker")).vmm_probe()
    assert not answer.available
    assert "firecracker not found (fix: cargo build --release" in answer.reason
    answer = vmm(binary="no-such-firecracker-here").vmm_probe()
    assert "no-such-firecracker-here not found" in answer.reason


def test_the_platform_table_names_its_accelerator(fake) -> None:
    options, _, _ = fake
    env = type("E", (), {})()
    env.kind, env.spec = "firecracker", {"memory_mib": 512}
    env.facts = vmm(**options).facts()
    assert platform.accelerator(env) == "KVM (hardware)" and platform.own_guest(env)
    nested_vmm = vmm(inside="tcg", **options)
    nested_vmm.machine = None
    assert "L1 guest" in nested_vmm.facts()["accelerator"]
    assert os.environ.get("FAKE_VMM_LOG")


def test_a_snapshot_session_saves_one_instance_and_restores_it_in_a_new_vmm(fake,
                                                                            tmp_path) -> None:
    options, requests, _ = fake
    environment = vmm(**options)
    session = environment.snapshots(job(), tmp_path)
    image = tmp_path / "image"
    image.mkdir()
    guest = session.start(tmp_path / "saved", deadline())
    saved = session.save(guest, image)
    guest.stop()
    restored = session.restore(image, tmp_path / "restored", deadline(), first_seq=6)
    try:
        assert set(saved.phases) == {"pause", "write"} and saved.bytes == 0
        assert set(restored.phases) == {"spawn", "load"}
        assert restored.guest.first_seq == 6 and restored.guest.resumed
    finally:
        restored.guest.stop()
        session.close()
    starts = [r["argv"] for r in requests() if "argv" in r]
    assert len(starts) == 2 and starts[1][:1] == ["--api-sock"]  # the restore: its API only
    assert not Path(starts[1][1]).parent.exists()  # the restore's folder went with it


@pytest.fixture
def quick_test_boot(monkeypatch, tmp_path):
    """A test boot of 1 s, its answer neither read from nor kept in this host's cache."""
    from guestbench.environments.fullsystem import kvm
    monkeypatch.setattr(kvm, "KVM_PROBE_S", 1.0)
    monkeypatch.setattr(kvm, "remembered", lambda key: None)
    kept = []
    monkeypatch.setattr(kvm, "remember", lambda key, answer: kept.append((key, answer)))
    monkeypatch.setattr(api_vmm.tempfile, "tempdir", str(tmp_path))
    return kept


def test_on_the_host_a_guest_that_never_boots_makes_it_unavailable(fake, quick_test_boot,
                                                                  tmp_path) -> None:
    options, _, _ = fake
    environment = vmm(**options)
    answer = environment.ready(None)
    assert not answer.available
    assert answer.reason == ("/dev/kvm exists but a test guest did not boot under Firecracker "
                             "within 1 s")
    [(key, kept)] = quick_test_boot
    assert key == [options["binary"], "id", "firecracker"] and kept == answer
    assert not list(tmp_path.glob("guestbench-firecracker-test-*"))  # its folder is gone


def test_on_the_host_a_guest_whose_agent_ran_makes_it_available(fake, quick_test_boot,
                                                               monkeypatch) -> None:
    options, requests, _ = fake
    monkeypatch.setenv("FAKE_VMM_PRINT_AFTER", "PUT /actions")
    monkeypatch.setenv("FAKE_VMM_PRINT", "guestbench-init: agent exited with status 0")
    from guestbench.environments.fullsystem import kvm
    monkeypatch.setattr(kvm, "KVM_PROBE_S", 30.0)  # it ends with the VMM, long before
    environment = vmm(**options)
    answer = environment.ready(None)
    assert answer.available, answer.reason
    boot = next(r for r in requests() if r.get("path") == "/boot-source")
    assert boot["body"]["boot_args"].endswith(",--version")  # the agent prints its version


def test_a_vmm_s_refusal_is_a_failed_run_with_its_words(build_plan, run_plan, store,
                                                        monkeypatch) -> None:
    """Through the runner: the VMM refused what the plan asked (failed), where a start that
    broke for the host's reasons is infra."""
    from guestbench.environments.kinds.fake import Fake

    def refuses(self, job, logdir, deadline_ns):
        raise ApiRefused("Firecracker", "PUT", "/machine-config", 400,
                         "The memory size (MiB) is either 0, or not a multiple")
    monkeypatch.setattr(Fake, "start", refuses)
    plan = build_plan([{"name": "env", "kind": "fake"}], repeat=1, timeout_s=5)
    (run,) = store.runs(run_plan(plan))
    assert run.status == "failed"
    assert run.reason == ("could not start: Firecracker refused PUT /machine-config: 400 The "
                          "memory size (MiB) is either 0, or not a multiple")


def test_the_vmm_process_s_threads_are_read_on_the_host(fake, tmp_path) -> None:
    options, _, _ = fake
    environment = vmm(**options)
    guest = environment.start(job(), tmp_path / "logs", deadline())
    try:
        read, classify = environment.thread_reader(guest)
        text, session = read()
        reading = threads.parse(text, session)
        assert session is None and reading.threads  # the stand-in's own threads
        assert {classify(name) for name, _ in reading.threads.values()} <= {"vmm", "io"}
    finally:
        guest.stop()


def test_inside_a_vm_the_threads_are_read_only_when_asked_and_the_guest_lingers() -> None:
    read = Job("getpid", Path("/gbagent"), ("getpid",), read_threads=True)
    timed = Job("start", Path("/gbagent"), ("idle",))  # a run that times the instance's life
    assert not vmm("firecracker-nested").lingers(read)
    assert "thread_cpu = true" in vmm("firecracker-nested").facts()["vmm_threads"]
    asked = vmm("firecracker-nested", thread_cpu=True)
    assert asked.lingers(read) and not asked.lingers(timed)
    assert "vmm_threads" not in asked.facts()
    assert not vmm(thread_cpu=True).lingers(read)  # on the host the reading is at once
    assert "thread_cpu = false" in vmm(thread_cpu=False).facts()["vmm_threads"]


def test_a_nested_run_is_priced_as_qemu_kvm_nested_s_and_a_host_one_as_kvm_s() -> None:
    """The first estimate's prior (runner/estimate.py): the three VMMs boot in about the same
    time in an L1 machine (3.5-4.6 s here), and a host's KVM boots in about a second."""
    cost = {name: environments.create(environments.preset_spec(name)).typical_cost()
            for name in ("firecracker-nested", "cloud-hypervisor-nested", "qemu-kvm-nested",
                         "firecracker", "cloud-hypervisor")}
    assert cost["firecracker-nested"] == cost["cloud-hypervisor-nested"] \
        == cost["qemu-kvm-nested"] == (5.0, 10.0)
    assert cost["firecracker"] == cost["cloud-hypervisor"] == (1.0, 1.05)
