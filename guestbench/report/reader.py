"""What a published footnote says: what is true of the value, for a reader of the write-up.

The terminal and --detail keep a run's reason whole, with the operator's instructions in it
("(fix: ...)", "to test again: rm /root/.cache/..."). A published table (plain) says what
happened to the value in the reader's words: "not run here: a test guest did not boot under
KVM within 8 s". Parenthesized asides (instructions, retries, dates) go, and where in a
program's source an assertion failed ("kvm.c:3183: "); a path of the host's file system
becomes its last part, but a device's or the kernel's (/dev/kvm, /proc/cpuinfo,
/sys/...) stays whole, since that is its name; the status leads, in words.
"""

from __future__ import annotations

import re

LEADS = {"unavailable": "not run here", "unsupported": "not supported there",
         "interrupted": "not run: the campaign was stopped first", "failed": "failed",
         "timeout": "timed out", "crashed": "crashed", "infra": "could not be started"}
_ASIDE = re.compile(r"\s*\([^()]*\)")  # the innermost parentheses, with the space before
_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.+@~-]+/)*([\w.+@~-]+)")
_NAMES = ("/dev/", "/proc/", "/sys/")  # paths that are names a reader knows: kept whole
_URL = re.compile(r"\s*\(?(?:see:?\s+)?(?:https?|ftp)://\S+")
# where in a program's source an assertion failed (QEMU's "../../target/i386/kvm/kvm.c:3183: ")
_SOURCE = re.compile(r"(?<!\S)(?:\.\./|\./)*(?:[\w+-]+/)*[\w+-]+\.(?:c|cc|cpp|h|rs):\d+:\s*")
_STAMP = re.compile(r"^\[\s*\d+\.\d+\]\s*")  # a kernel log line's time
# a console's lines that say the guest is gone (the panic, BUG, Oops), then any that says
# something went wrong; a console reason's parts are joined by " | " (console.joined)
_FAULT = re.compile(r"Kernel panic|kernel BUG|\bBUG: |\bOops\b|general protection fault"
                    r"|Panic on CPU|segfault|Segfault")
_WRONG = re.compile(r"error|fatal|fail|cannot|can't|not found|denied|refus|invalid|unknown|"
                    r"unable|no such", re.IGNORECASE)


def said(status: str, reason: str) -> str:
    """A status and its reason as a published footnote says them: one line."""
    text = plain_words(decisive_line(reason))
    lead = LEADS.get(status, status)
    return f"{lead}: {text}" if text else lead


def decisive_line(reason: str) -> str:
    """Of a reason made of a console's lines ("a | b | ... | c"), the line that says what
    went wrong (the panic, the BUG, else an error), with the error line just before it where
    there is one (UML's "ptrace set fp regs failed" before its panic); any other reason whole.
    Kernel log times, URLs and the end-of-panic banner go."""
    parts = [_STAMP.sub("", part.strip()) for part in re.split(r" \| |\n", reason)]
    parts = [part for part in parts if part and part != "..." and not part.startswith("---[")]
    if len(parts) < 2:
        return _URL.sub("", reason)
    found = next((index for index, part in enumerate(parts) if _FAULT.search(part)), None)
    if found is None:
        found = next((index for index, part in enumerate(parts) if _WRONG.search(part)), None)
    if found is None:  # nothing in it says what went wrong: not a console's lines, maybe
        return _URL.sub("", reason)
    line = parts[found]
    if found and _WRONG.search(parts[found - 1]) and not _FAULT.search(parts[found - 1]):
        line += f", after: {parts[found - 1]}"
    return _URL.sub("", line)


def plain_words(text: str) -> str:
    """The text without its asides and the host's paths (only their last part stays)."""
    while True:
        shorter = _ASIDE.sub("", text)
        if shorter == text:
            break
        text = shorter
    text = _SOURCE.sub("", text)
    text = _PATH.sub(lambda found: found.group(0) if found.group(0).startswith(_NAMES)
                     else found.group(1), text)
    return " ".join(text.split()).rstrip(" .;:,")
