"""What full-system guest kinds (qemu, uml, command) share: the base that boots an image
(base.py), the console and its records, the channels and devices, disks, QMP, KVM and
vCPU placement."""
