"""A generated graph lowered straight into a Relax ``IRModule`` with ``relax.BlockBuilder``,
beside the ONNX lowering (``dlgate.materialize.onnx_model``): TVM's passes then see modules
its ONNX importer never writes (a private function called from ``main``, dataflow blocks
with bindings outside them, symbolic shape variables bound by ``match_cast``).

``lowerings`` holds one small lowering per operator, found by the spec's name; ``module``
assembles the IRModule. Both import TVM, so only the ``tvm-relax`` backend imports them,
inside its worker."""

#: The spec names the direct path lowers (``lowerings.covered()``), written out so that the
#: gate, which never imports TVM itself, can draw a Relax-native case from them
#: (``relax_share``); a test checks the two agree.
COVERED = (
    "Abs", "Acos", "Acosh", "Add", "And", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan", "Atanh", "BitwiseAnd",
    "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "Ceil", "Concat", "Concat3", "Concat4", "Concat5", "Cos",
    "Cosh", "Div", "DivInt", "Equal", "Erf", "Exp", "Flatten", "Floor", "Greater", "GreaterOrEqual", "Identity",
    "IsInf", "IsNaN", "Less", "LessOrEqual", "Log", "LogSoftmax", "MatMul", "Max", "Max4", "Mean", "Mean5", "Min",
    "Min4", "Mod", "ModInt", "Mul", "Neg", "Not", "Or", "Pow", "Reciprocal", "ReduceL1", "ReduceL2",
    "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum",
    "ReduceSumSquare", "Relu", "Reshape", "Round", "Sigmoid", "Sign", "Sin", "Sinh", "Slice", "Softmax", "Sqrt",
    "Squeeze", "Sub", "Sum", "Sum5", "Tan", "Tanh", "Transpose", "Unsqueeze", "Where", "Xor",
)
