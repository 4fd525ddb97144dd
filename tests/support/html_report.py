"""A campaign full of markup to escape (populate), and a strict little DOM to read the HTML
report with (parse, ids)."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

from guestbench.store.records import RunRecord


EVIL = '<script>alert(1)</script> "quoted" & more'
EVIL_ENV = 'ev<script>alert(1)</script>"&'
EVIL_LABEL = 'getpid[tag=<script>alert(1)</script>"&]'
FACTS = {"hostname": EVIL, "cpu_model": "Test CPU", "logical_cpus": 4, "kernel": "6.1.0-test",
         "mitigations": {"meltdown": "Not affected"}, "load_avg": [0.5, 0.25, 0.125]}
CHECKS = {"before": {"load_avg": [0.5, 0.25, 0.125], "governors": {"cpu0": "performance"},
                     "virtualised": False},
          "after": {"load_avg": [0.6, 0.3, 0.1], "governors": {"cpu0": "performance"}},
          "steal_pct": 0.0, "warnings": [f"load was high {EVIL}"]}
STARTED = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)
# boot points in ms from VMM start, each run adding its repetition (0 to 2): guest clock zero
# at 150 for the median run
BOOT = {"boot_first_byte": 50.0, "boot_userspace": 400.0, "boot_agent_ready": 600.0,
        "boot_powered_off": 700.0, "guest_uptime": 450.0, "boot_clock_zero": 149.0}
VOID = {"meta", "br", "hr", "img", "input", "link", "area", "base", "col", "source", "wbr"}


def populate(store, logs: Path) -> int:
    """base; slow (about 350x base: a log axis); an environment and a label named with markup;
    one that failed with markup in its reason; one unavailable (no log); one whose log folder is
    gone; boot samples in base and slow. Log folders hold real files, names needing escapes."""
    names = ["base", "slow", EVIL_ENV, "bad", "gone", "lost"]
    campaign_id = store.create_campaign("html <b>&", {"source": EVIL}, FACTS, "fp", "base",
                                        str(logs), "0.1.0", host_checks=CHECKS)
    env_ids = {name: store.add_environment(
        campaign_id, name, "fake", {"name": name, "kind": "fake", "note": EVIL},
        name != "gone", "unavailable: " + EVIL if name == "gone" else "fake", position)
        for position, name in enumerate(names)}

    def add(env: str, label: str, workload: str, repetition: int, samples, status="ok",
            reason="") -> None:
        folder = logs / f"env{names.index(env)}" / re.sub(r"\W", "_", label) / f"rep {repetition}#%"
        if env not in ("gone", "lost"):
            folder.mkdir(parents=True)
            (folder / "stdout.log").write_text("agent output\n")
            (folder / "console [raw].log").write_text("console\n")
        store.add_run(campaign_id, RunRecord(
            environment_id=env_ids[env], workload=workload, label=label, params={},
            repetition=repetition, status=status, reason=reason, started_at=STARTED,
            host_seconds=0.5, log_path=None if env == "gone" else str(folder),
            samples=tuple(samples)))

    for repetition in range(3):
        for env, scale in (("base", 1.0), ("slow", 350.0), (EVIL_ENV, 1.1), ("lost", 1.2)):
            time_ns = (100.0 + 10 * repetition) * scale
            add(env, "getpid", "getpid", repetition,
                [("time_per_op", "ns", time_ns), ("tsc_per_op", "cycles", 2.5 * time_ns)])
            add(env, EVIL_LABEL, "getpid", repetition, [("time_per_op", "ns", time_ns / scale)])
        add("bad", "getpid", "getpid", repetition, [], "failed", EVIL)
        add("gone", "getpid", "getpid", repetition, [], "unavailable", "runc not found")
        for env, slower in (("base", 1.0), ("slow", 1.5)):
            add(env, "boot", "boot", repetition,
                [(metric, "ms", value * slower + repetition) for metric, value in BOOT.items()])
    store.finish_campaign(campaign_id, "finished", CHECKS)
    return campaign_id


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list["Node | str"] = field(default_factory=list)
    parent: "Node | None" = None

    def text(self) -> str:
        return "".join(child if isinstance(child, str) else child.text()
                       for child in self.children)

    def all(self, tag: str | None = None, **attrs: str) -> list["Node"]:
        found = []
        for child in self.children:
            if isinstance(child, Node):
                if (tag is None or child.tag == tag) and all(
                        attrs[key] in child.attrs.get(key.rstrip("_"), "").split()
                        for key in attrs):
                    found.append(child)
                found += child.all(tag, **attrs)
        return found


class TreeBuilder(HTMLParser):
    """A strict little DOM: a closing tag must match the element it closes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {})
        self.current = self.root

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {key: value or "" for key, value in attrs}, parent=self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, {k: v or "" for k, v in attrs}, parent=self.current))

    def handle_endtag(self, tag):
        assert self.current.tag == tag, f"</{tag}> closes <{self.current.tag}>"
        self.current = self.current.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(page: str) -> Node:
    builder = TreeBuilder()
    builder.feed(page)
    builder.close()
    assert builder.current is builder.root, "unclosed elements"
    return builder.root


def ids(dom: Node) -> dict[str, Node]:
    return {node.attrs["id"]: node for node in dom.all() if "id" in node.attrs}
