"""Input formats, each a folder behind one small interface (`base.ProfileFormat`), listed in `registry.FORMATS`.

A format says which files of a session folder are its hosts, reads one host
into the model, and states its hints for users; what only some formats have
(compiled programs, companion files, folder sessions, snapshots) are optional
protocols of `base`. The rest of tb_leakfinder knows formats only through the
registry. A format may import the model, `read.files`, `errors`, `lazy`, `base` and the
shared helpers of `common/`; never another format, analyses, the engine or views.
"""
