"""Fail set-up, in one line, unless the installed torch is PyTorch's CPU build.

Run by .ci/setup after installing: a CUDA build that slipped in (from the package index,
or already in a reused .venv) costs several GB and is not what the tests are pinned to.
Reads the installed distribution's version, the same string as ``torch.__version__``,
without importing torch (seconds saved, and no CUDA library is loaded to find out).
"""
import sys
from importlib import metadata


def main() -> int:
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        print(".ci/setup: torch is not installed in .venv", file=sys.stderr)
        return 1
    # macOS: PyTorch publishes no CUDA build, and its CPU wheels carry no +cpu label.
    if sys.platform != "darwin" and not version.endswith("+cpu"):
        print(f".ci/setup: torch {version} is installed, not PyTorch's CPU build (+cpu): remove .venv and run "
              ".ci/setup again where https://download.pytorch.org/whl/cpu (or a mirror of it) can be reached",
              file=sys.stderr)
        return 1
    print(f".ci/setup: torch {version} (CPU build)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
