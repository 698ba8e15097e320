"""Support probing: single-operator models (``single``) run on a backend to learn which
operator x dtype x opset combinations it supports, cached per backend version
(``support``), so that a campaign can restrict generation to what the backend runs."""
