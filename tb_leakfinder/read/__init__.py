"""Finding and reading profile files, the only package that does I/O on them: discovery and files (through
gfile, so gs:// and s3:// work) and the input formats. May import the model, errors, lazy, the schemas (proto) and
the compiled parts' loader (compiled); never analyses."""
