"""Kernel targets: a named kernel booted in a QEMU guest as the SUT.

* :mod:`srperf.kernel.target`: what the testbed file's ``kernel:`` block names;
* :mod:`srperf.kernel.package`: a Debian kernel package fetched once into a cache,
  unpacked, its SHA-256 recorded (or a kernel image and modules built elsewhere);
* :mod:`srperf.kernel.initramfs`: the guest's root file system (busybox, iproute2,
  bash, the kernel's own NIC and VRF modules, the console agent);
* :mod:`srperf.kernel.qemu`: the accelerator probe and the QEMU process.

The testbed kind is :mod:`srperf.testbeds.kernel_vm`; commands reach the guest
through :mod:`srperf.transports.console`.
"""
