"""Input formats, each a folder behind one small interface (`base.ProfileFormat`), listed in `registry.FORMATS`.

A format says which files of a session folder are its hosts (and which other
files belong in a host's cache key), and reads one host into the model. The
rest of tb_leakfinder knows formats only through this registry. A format may
import the model, `read.files` and `errors`; never analyses, the engine or views.
"""
