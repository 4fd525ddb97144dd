"""The network workloads' host side: the path into an instance (paths.py: loopback, a veth
pair into a network namespace, a tap device, QEMU's user-mode network) and the agent's peer
on the host that the instance's agent talks to (peer.py). docs/workloads-network.md."""
