"""Profiles built for tests and benchmarks: XSpace writers that follow the documented conventions, and a
werkzeug client of the plugin; no analysis uses it. May import the model, the schemas (proto) and the plugin loader; only tests,
benchmarks and tools import it."""
