"""kernel_build: finding the Linux source, preparing it once, parameters and agent words."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest
from pydantic import ValidationError

from guestbench.workloads import CATALOGUE, build
from guestbench.workloads.build import kernel_source as kernelsrc
from guestbench.workloads.base import InputError, InputMissing

KERNEL = CATALOGUE["kernel_build"]

# A stand-in for a Linux tree: what preparing looks at (Makefile, Kconfig), a config
# target that writes .config and counts how often it ran, and prepare, which needs it.
FAKE_MAKEFILE = """\
tinyconfig defconfig:
\techo "CONFIG_$@=y" > .config
\techo x >> configured-times
prepare:
\ttest -f .config
\tcat .config > prepared
broken:
\t@echo "conf: something is wrong" >&2; exit 1
"""


def fake_tree(folder: Path, makefile: str = FAKE_MAKEFILE) -> Path:
    folder.mkdir(parents=True)
    (folder / "Makefile").write_text(makefile)
    (folder / "Kconfig").write_text("mainmenu \"fake\"\n")
    (folder / "init").mkdir()
    (folder / "init" / "main.c").write_text("int main;\n")
    return folder


def fake_tarball(tmp_path: Path, name: str = "linux-source-6.1.tar.gz") -> Path:
    tree = fake_tree(tmp_path / "build-tree" / "linux-source-6.1")
    tarball = tmp_path / name
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(tree, arcname="linux-source-6.1")
    return tarball


def test_the_default_source_is_the_newest_tarball(tmp_path):
    assert kernelsrc.default_source(tmp_path) == ""
    for version in ("5.10", "6.1", "6.12", "6.9"):
        (tmp_path / f"linux-source-{version}.tar.xz").write_bytes(b"")
    (tmp_path / "linux-config-6.1").mkdir()
    assert kernelsrc.default_source(tmp_path) == str(tmp_path / "linux-source-6.12.tar.xz")


def test_a_tarball_is_unpacked_without_its_top_folder_and_configured_once(tmp_path):
    tarball = fake_tarball(tmp_path)
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    tree = kernelsrc.prepared(str(tarball), "tinyconfig", inputs)
    assert tree.parent == inputs and (tree / "init" / "main.c").is_file()
    assert (tree / ".config").read_text() == "CONFIG_tinyconfig=y\n"
    assert (tree / "prepared").read_text() == "CONFIG_tinyconfig=y\n"  # after configuring
    assert (tree / kernelsrc.TREE_MARK).is_file()
    assert kernelsrc.prepared(str(tarball), "tinyconfig", inputs) == tree
    assert (tree / "configured-times").read_text() == "x\n"  # not configured again
    other = kernelsrc.prepared(str(tarball), "defconfig", inputs)
    assert other != tree and (other / ".config").read_text() == "CONFIG_defconfig=y\n"
    assert sorted(p.name.startswith(".") for p in inputs.iterdir()) == [False, False]


def test_an_unpacked_tree_is_copied_not_changed(tmp_path):
    source = fake_tree(tmp_path / "linux")
    tree = kernelsrc.prepared(str(source), "defconfig", tmp_path / "inputs")
    assert (tree / ".config").is_file() and not (source / ".config").exists()


def test_a_missing_source_says_how_to_get_one(tmp_path):
    for given in ("", str(tmp_path / "linux-9.9.tar.xz")):
        with pytest.raises(InputMissing, match="apt-get install linux-source"):
            kernelsrc.prepared(given, "tinyconfig", tmp_path)


def test_missing_host_tools_are_named_with_their_packages(tmp_path, monkeypatch):
    real_which = kernelsrc.shutil.which
    monkeypatch.setattr(kernelsrc.shutil, "which",
                        lambda name: None if name in ("flex", "xz") else real_which(name))
    assert kernelsrc.host_tools_missing(Path("linux-source-6.1.tar.xz")) == ["flex", "xz-utils"]
    assert kernelsrc.host_tools_missing(Path("/src/linux")) == ["flex"]
    tarball = fake_tarball(tmp_path, "linux-6.1.tar.xz")
    with pytest.raises(InputMissing, match=r"needs flex, xz-utils on this host \(apt-get install "
                                           r"flex xz-utils\)"):
        kernelsrc.prepared(str(tarball), "tinyconfig", tmp_path)


def test_a_failed_configure_leaves_nothing_half_made(tmp_path, monkeypatch):
    source = fake_tree(tmp_path / "linux", FAKE_MAKEFILE.replace("tinyconfig defconfig:",
                                                                 "defconfig:"))
    (source / "Makefile").write_text((source / "Makefile").read_text()
                                     + "tinyconfig: broken\n")
    inputs = tmp_path / "inputs"
    with pytest.raises(InputError, match=r"make tinyconfig failed \(status 2\): .*something is "
                                         r"wrong"):
        kernelsrc.prepared(str(source), "tinyconfig", inputs)
    assert list(inputs.iterdir()) == []


def test_a_failed_prepare_is_an_input_error_naming_it(tmp_path):
    source = fake_tree(tmp_path / "linux", FAKE_MAKEFILE.replace("\ttest -f .config",
                                                                 "\ttest -f no-such-file"))
    with pytest.raises(InputError, match=r"make prepare failed \(status 2\)"):
        kernelsrc.prepared(str(source), "tinyconfig", tmp_path / "inputs")
    assert list((tmp_path / "inputs").iterdir()) == []


def test_what_is_not_a_tree_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a Linux source tree"):
        kernelsrc.prepared(str(tmp_path / "empty"), "tinyconfig", tmp_path / "inputs")
    junk = tmp_path / "junk.tar.gz"
    with tarfile.open(junk, "w:gz") as archive:
        (tmp_path / "top" / "readme").parent.mkdir()
        (tmp_path / "top" / "readme").write_text("hi")
        archive.add(tmp_path / "top", arcname="top")
    with pytest.raises(InputError, match="did not unpack to a Linux source tree"):
        kernelsrc.prepared(str(junk), "tinyconfig", tmp_path / "inputs")


def test_parameters():
    params = KERNEL.params_model(source="/src/linux.tar.xz")
    assert (params.config, params.jobs, params.target, params.cache) == (
        "tinyconfig", 2, "", "copied")
    for bad in ({"config": "allyesconfig"}, {"jobs": 0}, {"target": "-j99"},
                {"target": "a b"}, {"target": "x;rm"}, {"cache": "warm"}):
        with pytest.raises(ValidationError):
            KERNEL.params_model(**bad)
    assert KERNEL.params_model(target="arch/x86/boot/bzImage").target == "arch/x86/boot/bzImage"


def test_agent_words_fix_the_build_identity_and_name_the_target():
    words = KERNEL.agent_args(KERNEL.params_model(jobs=4, target="lib/ctype.o"))
    assert words[:4] == ["exec", "make", "-s", "-j4"]
    assert words[-1] == "lib/ctype.o"
    assert "KBUILD_BUILD_USER=guestbench" in words and "KBUILD_BUILD_HOST=guestbench" in words
    assert KERNEL.agent_args(KERNEL.params_model())[-1].startswith("KBUILD_BUILD_TIMESTAMP=")


def test_needs_the_prepared_tree_in_scratch_and_drops_caches_when_cold(tmp_path):
    tarball = fake_tarball(tmp_path)
    params = KERNEL.params_model(source=str(tarball))
    needs = KERNEL.job_needs(params, tmp_path)
    assert needs.scratch and needs.exec_children and needs.scratch_files is not None
    assert (needs.scratch_files / ".config").is_file() and not needs.drop_caches
    assert needs.scratch_mib == build.KERNEL_OUTPUT_MIB["tinyconfig"]
    cold = KERNEL.job_needs(params.model_copy(update={"cache": "cold"}), tmp_path)
    assert cold.drop_caches and cold.uncache_files and cold.scratch_files == needs.scratch_files


def test_images_get_what_kbuild_runs():
    assert {"make", "gcc", "as", "ld", "bc", "xz", "awk", "sed"} <= set(KERNEL.tools)
    assert KERNEL.family == "build" and KERNEL.primary_metric == "elapsed" and not KERNEL.quick
