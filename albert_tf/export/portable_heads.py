"""The heads the portable exports (TFLite, ONNX) can serve: one table for export.portable, which
checks a head against it, and export.portable_flags, whose --head lists it without importing
TensorFlow (export.portable_flags imports export.portable inside its functions, so the table
cannot live in either without an import cycle)."""

# --head of the portable exports: the heads export.portable.serving_outputs has outputs for
# (auto: the checkpoint's; none: the encoder alone).
HEADS = ("auto", "none", "classifier", "squad_v1", "token_classifier")
