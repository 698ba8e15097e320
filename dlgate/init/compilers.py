"""What ``dlgate init`` knows of each compiler it sets up: one small entry per compiler.

An entry says which dlgate backends test it, how its repository builds the wheel under test
(a shell script run in the source folder that leaves exactly one wheel in ``$WHEEL_DIR``),
what a GitHub-hosted runner must install first, how to recognise its repository, and how its
CUDA build differs for a self-hosted GPU runner. A compiler whose build cannot be made from
its public repository (TensorRT) names a pip requirement instead and runs on a GPU only.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Compiler:
    name: str  # the --compiler value
    title: str
    backends: tuple  # the pull-request campaign's backends under test
    weekly_backends: tuple  # the weekly campaign's (CPU) backends under test
    gpu_backends: tuple  # what the GPU job runs (`dlgate run --backend`)
    module: str  # the Python module the build installs
    release: str  # a released build, the other way to give the base build (base-compiler)
    build: str | None  # shell: build the wheel under test into "$WHEEL_DIR" (None: a requirement)
    gpu_build: str | None  # the same, with CUDA, on the self-hosted GPU runner
    hosted_setup: str = ""  # shell: system packages a GitHub-hosted runner lacks for `build`
    requirement: str = ""  # the build under test when there is no wheel build
    gpu_replaces: tuple = ()  # distributions dlgate pulls in that the GPU build must replace
    build_minutes: int = 120
    gpu_minutes: int = 240
    submodules: bool = True
    # recognising the repository: (file, regular expression or None for "exists")
    markers: tuple = ()
    remote_names: tuple = ()  # repository names of its remote (github.com/OWNER/NAME)

    @property
    def gpu_only(self) -> bool:
        return self.build is None


_PIP = "python -m pip install --disable-pip-version-check"

COMPILERS = {c.name: c for c in (
    Compiler(
        name="tvm", title="Apache TVM",
        backends=("tvm",), weekly_backends=("tvm", "tvm@zero"), gpu_backends=("tvm:cuda",),
        module="tvm", release="apache-tvm==0.27.0",
        hosted_setup="sudo apt-get update -q\nsudo apt-get install -y -q --no-install-recommends llvm-dev",
        # The repository root is a scikit-build-core project (pyproject.toml): pip runs CMake.
        # LLVM gives the CPU target that dlgate's `tvm` backend compiles for. It is linked
        # statically (--ignore-libllvm: not the runner's libLLVM-NN.so, which the action's image
        # lacks) and its symbols hidden, as TVM's install guide does for a wheel run elsewhere.
        build=(f"{_PIP} --upgrade pip\n"
               "python -m pip wheel --no-deps --wheel-dir \"$WHEEL_DIR\" \\\n"
               "  --config-settings=\"cmake.define.USE_LLVM=llvm-config --ignore-libllvm --link-static\" \\\n"
               "  --config-settings=cmake.define.HIDE_PRIVATE_SYMBOLS=ON ."),
        gpu_build=(f"{_PIP} --upgrade pip\n"
                   "python -m pip wheel --no-deps --wheel-dir \"$WHEEL_DIR\" \\\n"
                   "  --config-settings=cmake.define.USE_LLVM=llvm-config \\\n"
                   "  --config-settings=cmake.define.USE_CUDA=ON ."),
        build_minutes=120,
        markers=(("pyproject.toml", r'(?m)^name\s*=\s*"(apache-)?tvm"'), ("python/tvm/__init__.py", None)),
        remote_names=("tvm",),
    ),
    Compiler(
        name="onnxruntime", title="ONNX Runtime",
        backends=("onnxruntime",), weekly_backends=("onnxruntime", "onnxruntime@basic"),
        gpu_backends=("onnxruntime:cuda",),
        module="onnxruntime", release="onnxruntime==1.32.0",
        # tools/ci_build/build.py configures with CMake, builds, and makes the wheel in
        # build/Release/dist/ (onnxruntime_gpu-*.whl with --use_cuda).
        build=(f"{_PIP} numpy packaging setuptools wheel\n"
               "python tools/ci_build/build.py --build_dir build --config Release --update --build \\\n"
               "  --build_wheel --parallel --skip_tests --compile_no_warning_as_error\n"
               "mkdir -p \"$WHEEL_DIR\"\n"
               "cp build/Release/dist/*.whl \"$WHEEL_DIR\"/"),
        gpu_build=(f"{_PIP} numpy packaging setuptools wheel\n"
                   "python tools/ci_build/build.py --build_dir build --config Release --update --build \\\n"
                   "  --build_wheel --parallel --skip_tests --compile_no_warning_as_error \\\n"
                   "  --use_cuda --cuda_home \"${CUDA_HOME:-/usr/local/cuda}\" --cudnn_home \"${CUDNN_HOME:-/usr}\"\n"
                   "mkdir -p \"$WHEEL_DIR\"\n"
                   "cp build/Release/dist/*.whl \"$WHEEL_DIR\"/"),
        gpu_replaces=("onnxruntime",),  # dlgate depends on onnxruntime; the CUDA build is onnxruntime-gpu
        build_minutes=180,
        markers=(("setup.py", r'package_name\s*=\s*"onnxruntime"'), ("tools/ci_build/build.py", None)),
        remote_names=("onnxruntime",),
    ),
    Compiler(
        name="inductor", title="PyTorch Inductor (torch.compile)",
        backends=("inductor",), weekly_backends=("inductor",), gpu_backends=("inductor:cuda",),
        module="torch", release="torch==2.13.0",
        # The build under test is PyTorch itself: it is also the reference (eager PyTorch), so
        # dlgate compares Inductor's code against the same build's eager kernels.
        build=(f"{_PIP} --upgrade pip\n"
               f"{_PIP} -r requirements.txt\n"
               "USE_CUDA=0 BUILD_TEST=0 python -m pip wheel --no-build-isolation --no-deps \\\n"
               "  --wheel-dir \"$WHEEL_DIR\" ."),
        gpu_build=(f"{_PIP} --upgrade pip\n"
                   f"{_PIP} -r requirements.txt\n"
                   "USE_CUDA=1 BUILD_TEST=0 python -m pip wheel --no-build-isolation --no-deps \\\n"
                   "  --wheel-dir \"$WHEEL_DIR\" ."),
        build_minutes=340,  # a GitHub-hosted job stops at 6 hours
        gpu_minutes=480,
        markers=(("torch/_inductor/__init__.py", None),),
        remote_names=("pytorch",),
    ),
    Compiler(
        name="tensorrt", title="NVIDIA TensorRT",
        backends=("tensorrt:cuda",), weekly_backends=("tensorrt:cuda",), gpu_backends=("tensorrt:cuda",),
        module="tensorrt", release="tensorrt-cu12",
        # TensorRT's core is not built from its public repository: the build under test is
        # the pip release (set another requirement or wheel in the GPU job's install step).
        build=None, gpu_build=None, requirement="tensorrt-cu12",
        submodules=False,
        markers=(("include/NvInfer.h", None),),
        remote_names=("TensorRT",),
    ),
)}


def _matches(root: str, path: str, pattern: str | None) -> bool:
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return False
    if pattern is None:
        return True
    try:
        with open(full, encoding="utf-8", errors="replace") as f:
            return re.search(pattern, f.read(1 << 20)) is not None
    except OSError:
        return False


def remote_name(url: str | None) -> str | None:
    """NAME of a remote URL such as https://github.com/OWNER/NAME.git or git@HOST:OWNER/NAME."""
    if not url:
        return None
    m = re.search(r"[:/]([^/:]+?)(?:\.git)?/?$", url.strip())
    return m.group(1) if m else None


def infer(root: str, remote_url: str | None = None) -> tuple:
    """(compiler names recognised in the repository at ``root``, how): its files first, then
    the name of its remote."""
    by_files = [c.name for c in COMPILERS.values() if any(_matches(root, p, rx) for p, rx in c.markers)]
    if by_files:
        return by_files, "its files"
    name = remote_name(remote_url)
    by_remote = [c.name for c in COMPILERS.values() if name and name.lower() in (n.lower() for n in c.remote_names)]
    return by_remote, f"its remote ({remote_url})"
