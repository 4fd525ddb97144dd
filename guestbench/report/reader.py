"""What a published footnote says: what is true of the value, for a reader of the write-up.

The terminal and --detail keep a run's reason whole, with the operator's instructions in it
("(fix: ...)", "to test again: rm /root/.cache/..."). A published table (plain) says what
happened to the value in the reader's words: "not run here: a test guest did not boot under
KVM within 8 s". Parenthesized asides (instructions, retries, dates) go; a path of the host's
file system becomes its last part; the status leads, in words.
"""

from __future__ import annotations

import re

LEADS = {"unavailable": "not run here", "unsupported": "not supported there",
         "interrupted": "not run: the campaign was stopped first", "failed": "failed",
         "timeout": "timed out", "crashed": "crashed", "infra": "could not be started"}
_ASIDE = re.compile(r"\s*\([^()]*\)")  # the innermost parentheses, with the space before
_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.+@~-]+/)*([\w.+@~-]+)")


def said(status: str, reason: str) -> str:
    """A status and its reason as a published footnote says them."""
    text = plain_words(reason)
    lead = LEADS.get(status, status)
    return f"{lead}: {text}" if text else lead


def plain_words(text: str) -> str:
    """The text without its asides and the host's paths (only their last part stays)."""
    while True:
        shorter = _ASIDE.sub("", text)
        if shorter == text:
            break
        text = shorter
    text = _PATH.sub(lambda found: found.group(1), text)
    return " ".join(text.split()).rstrip(" .;:,")
