"""The faults suite uses the integration suite's probes of this machine's environments."""

from tests.integration.conftest import agent_path, host_facts, probes  # noqa: F401 - fixtures
