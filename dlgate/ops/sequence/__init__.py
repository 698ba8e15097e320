"""Sequences and optionals, as the idioms exporters write around lists of tensors and
``None``-able tensors.

dlgate graphs carry tensors only, so every spec here is one multi-node idiom: it takes
graph tensors and returns graph tensors, and the sequence- or optional-typed values live
between its nodes (``onnx_ops`` lists every further operator type a lowering emits):

* ``SplitToSequenceConcat``: ``torch.cat(torch.split(x, s, d), c)``,
  ``torch.stack(x.unbind(d), c)``: SplitToSequence, then ConcatFromSequence.
* ``SplitToSequenceAt``: ``torch.split(x, s, d)[i]``: SequenceAt.
* ``SequenceEditConcat``: split x, erase one piece, insert the graph tensor y, concatenate
  back, and the list's length: SequenceErase, SequenceInsert.
* ``SequenceConstructAt``: ``[a, b, c][i]`` and ``len([a, b, c])``.
* ``SequenceAppendConcat``: ``l = []; l.append(a); l.insert(p, b); torch.cat(l, c)`` (or
  ``torch.stack``): SequenceEmpty (its ``dtype``), SequenceInsert.
* ``SequenceMapUnary`` / ``SequenceMapBinary``: a body graph (one element-wise operator,
  with a further non-sequence input for the binary one) applied to each piece of a split.
* ``OptionalCoalesce``: ``x if x is not None else d``, with an Optional that holds x or is
  empty (its ``type`` attribute): OptionalHasElement, then If with OptionalGetElement.
* ``OptionalGetElementTensor``: OptionalGetElement and OptionalHasElement on a plain tensor
  (opset 18).

Split sizes and positions are constants of the model, int64 or int32 as drawn (both are
allowed). The attributes record how a split is written (``mode``: ``sizes``, a 1-D input;
``scalar``, a 0-D chunk size; ``none``, no input: chunks of 1) and the pieces follow from
the input's shape, so a split by chunks stays valid when a dynamic dimension changes.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("split_to_sequence_concat", "split_to_sequence_at", "sequence_edit_concat", "sequence_construct_at",
             "sequence_append_concat", "sequence_map_unary", "optional_coalesce", "optional_get_element_tensor")
