"""A generated graph lowered straight into a Relax ``IRModule`` with ``relax.BlockBuilder``,
beside the ONNX lowering (``dlgate.materialize.onnx_model``): TVM's passes then see modules
its ONNX importer never writes (a private function called from ``main``, dataflow blocks
with bindings outside them, symbolic shape variables bound by ``match_cast``).

``lowerings`` holds one small lowering per operator, found by the spec's name; ``module``
assembles the IRModule. Both import TVM, so only the ``tvm-relax`` backend imports them,
inside its worker."""
