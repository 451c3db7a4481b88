"""The capture helper's companion file (`<host>.leakfinder.json`, docs/recordings.md): what it recorded inside the
training process beside a host's profile (the references holding the never-freed buffers, the process's memory, the
source lines named), read with that host into `model.recordings`."""
