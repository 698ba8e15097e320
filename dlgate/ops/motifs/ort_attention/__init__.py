"""onnxruntime's attention fusion (``attention_fusion.cc``, ``AttentionFusion``, level 2) on
the spelling it takes at every opset dlgate generates: a vision block's self-attention
over the pixels of an NCHW map (MobileCLIP's token mixer), fused into
``com.microsoft:MultiHeadAttention``. BERT's spelling, which becomes
``com.microsoft:Attention``, fuses only at opsets 11 to 13 with symbolic batch and sequence
dimensions (see ``dlgate.backends.ort_transformers``)."""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("attention_fusion_clip", "embed_layer_norm_attention")
