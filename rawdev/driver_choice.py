"""Which driver a command runs on (`--device auto|cuda|sim` and RAWDEV_DRIVER): shared by the `rawdev` command
and its subcommands (demo, mem), which import it from here rather than from each other."""
import os
import sys

DEVICE_CHOICES = ("auto", "cuda", "sim")


def choose_driver(device, prog, notice="No CUDA GPU found: using rawdev's simulated GPU.", notice_to=None):
    """Pick the driver for a command's --device: 'sim', 'cuda', or 'auto'. auto follows RAWDEV_DRIVER when it
    names a driver (cuda or sim: an explicit choice is never overridden); otherwise the GPU if there is one,
    else the simulator, printing `notice` (on stderr unless `notice_to` says). Returns the driver name in use."""
    from .errors import NoDeviceError, NoDriverError
    from .runtime import is_available, seam
    env = os.environ.get("RAWDEV_DRIVER", "").strip().lower()
    if env and env not in seam.CHOICES:
        raise SystemExit(f"{prog}: RAWDEV_DRIVER={env!r} is not a driver: expected one of {', '.join(seam.CHOICES)}")
    if device not in DEVICE_CHOICES:
        raise SystemExit(f"{prog}: --device {device!r}: expected one of {', '.join(DEVICE_CHOICES)}")
    if device == "auto" and env in ("cuda", "sim"):
        device = env
    if device == "sim":
        if seam._name != "sim":
            seam.use_driver("sim")
    elif device == "cuda":
        seam.use_driver("cuda")
        try:
            seam.driver()
        except (NoDriverError, NoDeviceError) as e:
            raise SystemExit(f"{prog}: {type(e).__name__}: {e}") from None
    elif not is_available():
        print(notice, file=notice_to or sys.stderr)
        seam.use_driver("sim")
    return seam.driver_name()
