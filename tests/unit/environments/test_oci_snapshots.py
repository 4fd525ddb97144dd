"""Whether runc and crun can checkpoint here: `criu check`'s answer, in CRIU's own words
without its source positions, with the version and the fix; a missing CRIU says what to
install. Asked once per CRIU."""

from __future__ import annotations

import stat

from guestbench.environments import oci_snapshots

CHECK_317 = """Error (criu/util.c:642): exited, status=1
Error (criu/util.c:642): exited, status=1
Error (criu/vdso.c:381): vdso: Unexpected rt vDSO area bounds
Error (criu/vdso.c:613): vdso: Failed to fill self vdso symtable
Error (criu/kerndat.c:1615): kerndat_vdso_fill_symtable failed when initializing kerndat.
Error (criu/crtools.c:260): Could not initialize kernel features detection."""


def _fake_criu(folder, check_exit: int, said: str = ""):
    criu = folder / "criu"
    criu.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'Version: 3.17.1'; exit 0; fi\n"
                    f"cat >&2 <<'END'\n{said}\nEND\necho called >> {folder}/calls\n"
                    f"exit {check_exit}\n")
    criu.chmod(criu.stat().st_mode | stat.S_IXUSR)
    return criu


def test_a_criu_that_fails_its_check_says_why_in_its_own_words(tmp_path, monkeypatch):
    _fake_criu(tmp_path, 1, CHECK_317)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(oci_snapshots, "_criu_answers", {})
    said = oci_snapshots.criu_refusal()
    assert said == ("runc and crun checkpoint with CRIU, and `criu check` fails here: vdso: "
                    "Unexpected rt vDSO area bounds; vdso: Failed to fill self vdso symtable; "
                    "kerndat_vdso_fill_symtable failed when initializing kerndat.; Could not "
                    "initialize kernel features detection. (CRIU 3.17.1; kernels from 6.13 on "
                    "need CRIU 4.1 or newer)")
    assert oci_snapshots.criu_refusal() == said
    assert (tmp_path / "calls").read_text().count("called") == 1  # asked once


def test_a_criu_that_passes_refuses_nothing_and_none_says_what_to_install(tmp_path, monkeypatch):
    _fake_criu(tmp_path, 0)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(oci_snapshots, "_criu_answers", {})
    assert oci_snapshots.criu_refusal() == ""
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert "not installed (apt-get install criu)" in oci_snapshots.criu_refusal()
