"""Guest images: content address, cache hits, atomic builds, the initramfs's contents, modules.

These build real images (busybox, the agent and cpio are on the machine) into a
temporary cache; nothing boots here (tests/integration/test_images.py does).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from guestbench import agent, images
from guestbench.process import proc
from guestbench.images import cache, contents, init_script, initramfs, kernel

KERNEL = images.default_kernel() if list(kernel.BOOT_DIR.glob("vmlinuz-*")) else None
UML = Path("/usr/bin/linux.uml")

pytestmark = pytest.mark.skipif(KERNEL is None, reason="no /boot/vmlinuz-* on this machine")


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def archive_names(archive: Path) -> set[str]:
    listing = proc.run(["cpio", "--quiet", "-t", "-F", str(archive)], timeout_s=30)
    assert listing.returncode == 0, listing.stderr
    return set(listing.stdout.split())


def archive_file(archive: Path, name: str) -> str:
    extracted = proc.run(["cpio", "--quiet", "-i", "--to-stdout", "-F", str(archive), name],
                         timeout_s=30)
    assert extracted.returncode == 0, extracted.stderr
    return extracted.stdout


def assert_clean(cache_dir: Path) -> None:
    """No temporary folder left, and the build lock is free."""
    assert not [p.name for p in cache_dir.glob("*.tmp-*")]
    with open(cache_dir / cache.LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises if still held


# ---- content address and cache ----

def test_the_same_inputs_give_the_same_id_in_any_cache(tmp_path):
    first = images.build(cache_dir=tmp_path / "a")
    second = images.build(cache_dir=tmp_path / "b")
    assert first.id == second.id
    assert len(first.id) == 16 and int(first.id, 16) >= 0
    assert first.built_s is not None and second.built_s is not None


def test_the_same_inputs_give_the_same_bytes_whenever_and_under_any_umask(tmp_path):
    first = images.build(cache_dir=tmp_path / "a")
    previous = os.umask(0o077)
    try:
        time.sleep(1.1)  # newc stores whole seconds
        second = images.build(cache_dir=tmp_path / "b")
    finally:
        os.umask(previous)
    assert first.initramfs.read_bytes() == second.initramfs.read_bytes()


def test_a_cache_hit_returns_the_image_without_building(cache_dir, monkeypatch):
    built = images.build(cache_dir=cache_dir)

    def no_build(*args):
        raise AssertionError("rebuilt an image that is in the cache")

    monkeypatch.setattr(initramfs, "write", no_build)
    again = images.build(cache_dir=cache_dir)
    assert again.built_s is None
    assert again.initramfs == built.initramfs == cache_dir / built.id / "initramfs.cpio"
    assert (again.id, again.kernel, again.kernel_version) == (built.id, built.kernel,
                                                              built.kernel_version)


def test_a_changed_init_script_gives_a_new_image(cache_dir, monkeypatch):
    before = images.build(cache_dir=cache_dir)
    monkeypatch.setattr(init_script, "INIT_SCRIPT", init_script.INIT_SCRIPT + "# changed\n")
    after = images.build(cache_dir=cache_dir)
    assert after.id != before.id and after.built_s is not None
    assert archive_file(after.initramfs, "init").endswith("# changed\n")


def test_a_changed_agent_gives_a_new_image(cache_dir, tmp_path, monkeypatch):
    before = images.build(cache_dir=cache_dir)
    changed = tmp_path / "gbagent"
    shutil.copy2(agent.path(), changed)
    with open(changed, "ab") as binary:
        binary.write(b"\0")  # trailing bytes change the file, not the program
    monkeypatch.setenv(agent.AGENT_ENV_VAR, str(changed))
    after = images.build(cache_dir=cache_dir)
    assert after.id != before.id


def test_a_changed_builder_version_gives_a_new_image(cache_dir, monkeypatch):
    before = images.build(cache_dir=cache_dir)
    monkeypatch.setattr(contents, "BUILDER_VERSION", contents.BUILDER_VERSION + "-next")
    assert images.build(cache_dir=cache_dir).id != before.id


def test_concurrent_builds_of_one_image_build_it_once(cache_dir):
    results: list[images.Image] = []

    def build() -> None:
        results.append(images.build(cache_dir=cache_dir))

    threads = [threading.Thread(target=build) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({image.id for image in results}) == 1
    assert sum(image.built_s is not None for image in results) == 1
    assert_clean(cache_dir)


def test_cached_lists_each_image_from_its_manifest(cache_dir):
    built = images.build(cache_dir=cache_dir)
    [entry] = images.cached(cache_dir)
    assert {"id", "kernel", "kernel_version", "modules", "tools", "size_bytes", "created_at",
            "path"} <= set(entry)
    assert entry["id"] == built.id
    assert entry["path"] == str(cache_dir / built.id)
    assert entry["size_bytes"] == built.initramfs.stat().st_size
    assert images.cached(cache_dir / "nowhere") == []


def test_the_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("GUESTBENCH_CACHE", str(tmp_path / "gb"))
    assert images.cache_root() == tmp_path / "gb" / "images"
    monkeypatch.delenv("GUESTBENCH_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert images.cache_root() == tmp_path / "xdg" / "guestbench" / "images"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert images.cache_root() == Path.home() / ".cache" / "guestbench" / "images"


# ---- failures leave nothing behind ----

def test_an_unknown_module_is_an_error_naming_it(cache_dir):
    with pytest.raises(images.ImageError, match="no_such_module"):
        images.build(modules=["no_such_module"], cache_dir=cache_dir)
    assert images.cached(cache_dir) == []


def test_a_build_that_fails_midway_leaves_no_folder_and_no_lock(cache_dir, monkeypatch):
    def fail(tree: Path, archive: Path) -> None:
        assert (tree / "bin" / "gbagent").is_file()  # really midway: the tree is staged
        raise images.ImageError("cpio broke")

    monkeypatch.setattr(initramfs, "_pack", fail)
    with pytest.raises(images.ImageError, match="cpio broke"):
        images.build(cache_dir=cache_dir)
    assert_clean(cache_dir)
    assert images.cached(cache_dir) == []
    assert [p.name for p in cache_dir.iterdir()] == [cache.LOCK_FILE]


def test_an_interrupted_build_leaves_no_folder(cache_dir, monkeypatch):
    def interrupt(tree: Path, archive: Path) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(initramfs, "_pack", interrupt)
    with pytest.raises(KeyboardInterrupt):
        images.build(cache_dir=cache_dir)
    assert_clean(cache_dir)


def test_leftovers_of_a_killed_build_are_removed_by_the_next(cache_dir):
    leftover = cache_dir / "0123456789abcdef.tmp-dead"
    leftover.mkdir(parents=True)
    (leftover / "initramfs.cpio").write_bytes(b"half")
    images.build(cache_dir=cache_dir)
    assert not leftover.exists()
    assert_clean(cache_dir)


def test_an_unknown_tool_is_an_error_naming_it(cache_dir):
    with pytest.raises(images.ImageError, match="no-such-tool-xyz"):
        images.build(tools=["no-such-tool-xyz"], cache_dir=cache_dir)


def test_a_missing_kernel_is_an_error_naming_it(cache_dir, tmp_path):
    with pytest.raises(images.ImageError, match="vmlinuz-missing"):
        images.build(kernel=tmp_path / "vmlinuz-missing", cache_dir=cache_dir)


# ---- what the initramfs holds ----

def test_the_initramfs_holds_init_busybox_agent_and_mount_points(cache_dir):
    image = images.build(cache_dir=cache_dir)
    names = archive_names(image.initramfs)
    assert {"init", "bin/busybox", "bin/gbagent", "guestbench/modules",
            "proc", "sys", "dev", "tmp"} <= names
    assert archive_file(image.initramfs, "init") == init_script.INIT_SCRIPT
    assert archive_file(image.initramfs, "guestbench/modules") == ""


def test_the_init_script_is_valid_busybox_sh():
    checked = proc.run(["/bin/busybox", "sh", "-n"], timeout_s=10,
                       stdin_data=init_script.INIT_SCRIPT)
    assert checked.returncode == 0, checked.stderr
    assert init_script.INIT_SCRIPT.startswith("#!/bin/busybox sh\n")


def test_a_tool_comes_with_its_libraries_and_loader(cache_dir):
    true = Path(shutil.which("true")).resolve()
    image = images.build(tools=["true"], cache_dir=cache_dir)
    names = archive_names(image.initramfs)
    assert image.tools == ("true",)
    assert shutil.which("true").lstrip("/") in names
    libraries = [n for n in names if "/libc.so" in n]
    loaders = [n for n in names if "/ld-linux" in n]
    assert libraries and loaders, f"{true} is dynamic but no libc/loader in {sorted(names)}"


# ---- kernel modules ----

def module_tree() -> Path:
    return Path("/lib/modules") / kernel.kernel_version(KERNEL)


needs_modules = pytest.mark.skipif(
    KERNEL is None or not (module_tree() / "modules.dep").is_file(),
    reason="the default kernel's modules are not installed")


def loadable(name: str) -> bool:
    return name in (module_tree() / "modules.dep").read_text()


@needs_modules
def test_modules_come_with_their_dependencies_first(cache_dir):
    if not loadable("/virtio_blk.ko"):
        pytest.skip("virtio_blk is built into this kernel")
    image = images.build(modules=["virtio_blk"], cache_dir=cache_dir)
    assert image.modules[-1] == "virtio_blk"
    assert image.modules.index("virtio") < image.modules.index("virtio_blk")
    assert image.modules.index("virtio_ring") < image.modules.index("virtio")
    listed = archive_file(image.initramfs, "guestbench/modules").splitlines()
    assert [Path(path).name for path in listed] == [f"{m}.ko" for m in image.modules]
    names = archive_names(image.initramfs)
    assert all(path.lstrip("/") in names for path in listed)


@needs_modules
def test_a_shared_dependency_is_loaded_once(cache_dir):
    if not (loadable("/virtio_blk.ko") and loadable("/9pnet_virtio.ko")):
        pytest.skip("virtio_blk or 9pnet_virtio is built into this kernel")
    image = images.build(modules=["virtio_blk", "9pnet_virtio"], cache_dir=cache_dir)
    assert image.modules.count("virtio") == 1
    assert image.modules.index("9pnet") < image.modules.index("9pnet_virtio")


@needs_modules
def test_a_builtin_module_needs_no_file(cache_dir):
    builtin = (module_tree() / "modules.builtin").read_text().split()
    name = Path(builtin[0]).name.removesuffix(".ko")
    image = images.build(modules=[name], cache_dir=cache_dir)
    assert image.modules == ()


@needs_modules
def test_an_explicit_modules_dir_resolves_the_same(cache_dir):
    default = images.build(modules=["virtio_blk"], cache_dir=cache_dir)
    explicit = images.build(modules=["virtio_blk"], cache_dir=cache_dir,
                            modules_dir=module_tree())
    assert explicit.modules == default.modules and explicit.id == default.id


def test_modules_for_uml_need_a_modules_dir(cache_dir):
    if not UML.is_file():
        pytest.skip(f"user-mode Linux is not installed ({UML})")
    with pytest.raises(images.ImageError, match="modules_dir"):
        images.build(kernel=UML, modules=["virtio_blk"], cache_dir=cache_dir)


# ---- kernels ----

def test_a_uml_kernel_builds_an_image(cache_dir):
    if not UML.is_file():
        pytest.skip(f"user-mode Linux is not installed ({UML})")
    image = images.build(kernel=UML, cache_dir=cache_dir)
    assert image.kernel == UML and image.kernel_version == "uml"
    assert image.id != images.build(cache_dir=cache_dir).id


def test_the_version_of_a_renamed_bzimage_comes_from_its_header(tmp_path):
    renamed = tmp_path / "bzImage"
    shutil.copyfile(KERNEL, renamed)
    assert kernel.kernel_version(renamed) == kernel.kernel_version(KERNEL)


def test_a_file_that_is_no_kernel_is_an_error(tmp_path):
    not_a_kernel = tmp_path / "kernel"
    not_a_kernel.write_bytes(b"hello" * 1000)
    with pytest.raises(images.ImageError, match="cannot tell which Linux version"):
        kernel.kernel_version(not_a_kernel)


def test_the_default_kernel_is_the_newest_version(tmp_path, monkeypatch):
    monkeypatch.setattr(kernel, "BOOT_DIR", tmp_path)
    with pytest.raises(images.ImageError, match="apt-get install linux-image-amd64"):
        images.default_kernel()
    for version in ("6.9.0-1-amd64", "6.10.0-1-amd64", "6.2.0-3-amd64"):
        (tmp_path / f"vmlinuz-{version}").write_bytes(b"")
    assert images.default_kernel() == tmp_path / "vmlinuz-6.10.0-1-amd64"


@pytest.mark.parametrize("damage", ["no-manifest", "garbled-manifest", "no-initramfs"])
def test_a_damaged_cache_entry_is_rebuilt_not_a_traceback(cache_dir, damage):
    first = images.build(cache_dir=cache_dir)
    folder = cache_dir / first.id
    if damage == "no-manifest":
        (folder / "manifest.json").unlink()
    elif damage == "garbled-manifest":
        (folder / "manifest.json").write_text("{not json")
    else:
        first.initramfs.unlink()
    assert images.cached(cache_dir) == [] or damage == "no-initramfs"
    again = images.build(cache_dir=cache_dir)
    assert again.id == first.id and again.built_s is not None and again.initramfs.is_file()
    assert [entry["id"] for entry in images.cached(cache_dir)] == [first.id]
    assert_clean(cache_dir)
