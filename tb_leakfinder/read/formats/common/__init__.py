"""What several formats' readers share: capped counts (limits), string tables (interning), the model's spans,
groups and steps from rows (rows), the order of a folder's snapshots (snapshots). Imports the
model, `read.files` and errors; never a format."""
