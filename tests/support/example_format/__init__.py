"""A small input format for the tests, written as CONTRIBUTING.md's "A new input format" says: a log of
allocations and frees in CSV. Nothing in tb_leakfinder names it: a test adds EXAMPLE to a copy of the registry's
FORMATS, and discovery, the engine, the report, the CLI and the tab then serve it with its own hints."""
