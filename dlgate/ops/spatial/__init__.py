"""Spatial operators: sampling (GridSample, AffineGrid, and the two chained as a spatial
transformer), regions of interest (RoiAlign, MaxRoiPool), deformable convolution
(DeformConv), unpooling (MaxPool -> MaxUnpool, as exporters write it), Col2Im,
CenterCropPad and NonMaxSuppression.

Every reference follows the ONNX operator specification; where the specification is silent
it follows what ONNX points to and the implementations agree on (PyTorch's grid_sample for
GridSample's cubic border padding, against onnx.reference), ONNX's own reference and
conformance data (RoiAlign's max mode), or, where ONNX has no reference, onnxruntime's
Caffe-derived code (MaxRoiPool's bins); where readings still differ the spec reports the
regime in ``undefined`` (RoiAlign's max mode, ties in MaxUnpool's and NonMaxSuppression's
selections).

Constant inputs (regions, batch indices, shapes, boxes, thresholds) are chosen in
``sample`` and written by the lowering; grids, thetas, offsets, masks and scores are graph
tensors. The NonMaxSuppression specs fix their (data-dependent) output size by
construction: either no box can suppress another (``iou_threshold`` 1), or the boxes are
constant clusters whose members overlap beyond the threshold while clusters are disjoint,
so exactly one box survives per cluster whatever the scores.
"""

#: The operator modules, in the order the registry lists and draws their specs (part of generation's
#: determinism; see dlgate/ops/registry.py). Each defines ``OPS``, the classes it registers.
OPERATORS = ("grid_sample", "affine_grid", "affine_grid_sample", "roi_align", "max_roi_pool", "deform_conv",
             "max_unpool", "col2im", "center_crop_pad", "non_max_suppression")
