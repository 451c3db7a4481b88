"""Pure functions over the model, returning dataclasses: pairing, families, verdicts, forecasts, the static view,
diffs, queries. May import the model, errors and lazy only: no I/O, no formats, no TensorBoard, no JSON."""
