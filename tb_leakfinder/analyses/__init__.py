"""Pure functions over the model: no I/O and no TensorBoard."""
