"""guestbench: what an execution environment costs compared with native, with numbers and spread."""

__version__ = "0.1.0"
