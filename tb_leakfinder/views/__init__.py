"""What users see: the TensorBoard plugin, the CLI and the Python API."""
