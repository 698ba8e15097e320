"""onnxruntime's Conv fusions (``onnxruntime/core/optimizer``): at level 1 a Conv whose
weights are constant initializers absorbs a following BatchNormalization, Add or Mul of
constants, when the Conv's output has no other consumer (``conv_bn_fusion.cc``,
``conv_add_fusion.cc``, ``conv_mul_fusion.cc``), and a zero Pad folds into the Conv or
AveragePool after it (``pad_fusion.cc``); at level 2 an activation joins the Conv as a
``FusedConv`` (``conv_activation_fusion.cc``); at level 3 the NCHWc layout transformer
rewrites 2-D Convs with static weights (``nchwc_transformer.cc``) and the Convs it leaves
take a residual Add and an activation (``conv_add_act_fusion.cc``)."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("conv_bn_fusion", "conv_add_fusion", "conv_mul_fusion", "conv_activation_fusion", "pad_conv_fusion",
             "pad_average_pool_fusion", "conv_add_activation_fusion", "nchwc_conv", "slice_concat_space_to_depth")
