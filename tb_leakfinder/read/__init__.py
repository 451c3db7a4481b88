"""Finding and decoding profile files: the only package that does I/O."""
