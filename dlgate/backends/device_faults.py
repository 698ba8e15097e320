"""What a device or its runtime failing looks like in a compiler's error: the words that make
the gate ask the device again before it keeps a failure as a finding. Kept apart from the
backends, like ``refusals.py``, so that it is tested without the compilers
(``tests/test_device_lost.py`` checks each entry against a message of the form the
runtime gives, and near misses that must not trigger).

The words never decide on their own: an illegal memory access in a kernel a compiler
generated is the compiler's bug. A compile or run error (or a crash) on a GPU device whose
text or worker output matches an entry makes the worker start afresh, which runs the
backend's start-up self-test on the device (``dlgate.backends.selftest``); only a device
that then fails it was lost (the run stops, "cannot run", exit status 4), and a device that
passes it keeps the failure a finding (``dlgate.exec.devicecheck``).

Entries are :class:`dlgate.backends.refusals.Mark` of kind ``text``: a substring of
``"<exception type>: <message>"`` or of the worker's output, matched case-sensitively, as
the runtimes print them.
"""
from __future__ import annotations

from dlgate.backends.refusals import Mark

#: The CUDA runtime's and driver's words (cudaGetErrorString, cuGetErrorName), which every
#: CUDA path prints through its own wrapper: onnxruntime's "CUDA failure 100: ...",
#: PyTorch's "CUDA error: ...", Triton's "Triton Error [CUDA]: ...", TVM's "CUDA: ...",
#: TensorRT's "CUDA initialization failure with error: 100".
CUDA = (
    Mark("text", "no CUDA-capable device is detected", "cudaErrorNoDevice (100): the device is gone"),
    Mark("text", "CUDA_ERROR_NO_DEVICE", "the driver API's name for the same (TVM, Triton)"),
    Mark("text", "busy or unavailable", "cudaErrorDevicesUnavailable (46): 'CUDA-capable device(s) is/are busy or "
                                        "unavailable'"),
    Mark("text", "CUDA_ERROR_DEVICE_UNAVAILABLE", "the driver API's name for the same"),
    Mark("text", "CUDA driver version is insufficient", "cudaErrorInsufficientDriver (35): a driver replaced "
                                                        "under the run"),
    Mark("text", "CUDA initialization failure", "TensorRT: 'CUDA initialization failure with error: N'"),
    Mark("text", "initialization error", "cudaErrorInitializationError (3), also after a driver reset"),
    Mark("text", "CUDA_ERROR_NOT_INITIALIZED", "the driver API's name for the same"),
    Mark("text", "uncorrectable ECC error", "cudaErrorECCUncorrectable (214): the device's memory failed"),
    Mark("text", "CUDA_ERROR_ECC_UNCORRECTABLE", "the driver API's name for the same"),
    Mark("text", "unspecified launch failure", "cudaErrorLaunchFailure (719): a kernel fault, or a device that "
                                               "fell off the bus"),
    Mark("text", "CUDA_ERROR_LAUNCH_FAILED", "the driver API's name for the same"),
    Mark("text", "illegal memory access", "cudaErrorIllegalAddress (700): a kernel's fault (a finding) that also "
                                          "leaves the context unusable; the self-test tells which"),
    Mark("text", "CUDA_ERROR_ILLEGAL_ADDRESS", "the driver API's name for the same"),
    Mark("text", "GPU is lost", "nvidia-smi / NVML: 'Unable to determine the device handle for GPU ...: GPU is lost'"),
    Mark("text", "CUDA error: unknown error", "cudaErrorUnknown (999) through PyTorch: what a driver reset gives"),
    Mark("text", "CUDA failure 999", "the same through onnxruntime's CUDA_CALL"),
)

#: Device name (a backend's ``devices`` entry) -> its runtime's words. onnxruntime's
#: TensorRT provider runs on CUDA too. A device not listed (the CPU) is never asked again.
TABLE: dict = {"cuda": CUDA, "tensorrt": CUDA}


def matching(device: str, error: dict | None) -> Mark | None:
    """The first entry for ``device`` that ``error`` (a worker's error record: ``type``,
    ``message``, ``log``) shows, or None."""
    if not error:
        return None
    text = f"{error.get('type', '')}: {error.get('message', '')}\n{error.get('log') or ''}"
    for mark in TABLE.get(device, ()):
        if mark.value in text:
            return mark
    return None
