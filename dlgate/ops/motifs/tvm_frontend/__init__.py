"""TVM's ONNX importer (``python/tvm/relax/frontend/onnx/onnx_frontend.py``) writes many
ONNX operators as several Relax operators, which ``FuseOps`` then joins into one fused
function named after the pieces: HardSwish is ``add_clip_divide_multiply``, Elu
``exp_subtract_relu_multiply_relu_add``, InstanceNormalization a mean-subtract-divide
function and a variance one. Each motif's condition ``decomposed`` is broken by an
operator the importer maps to one Relax operator (Relu, Gelu, LayerNormalization), which
leaves nothing to fuse; the element-wise chain's by a reduction between its two ops.
Where the importer refuses a dtype ONNX allows, the motif leaves that dtype out and says
why."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("tvm_activation_decomposition", "tvm_norm_decomposition", "tvm_elementwise_chain")
