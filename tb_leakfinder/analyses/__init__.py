"""Pure functions over the model, returning dataclasses: pairing, families, verdicts, forecasts, the static view,
diffs, queries. May import the model, errors, lazy and the compiled parts' loader (compiled) only: no I/O, no formats,
no TensorBoard, no JSON."""
