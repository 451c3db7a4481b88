"""A werkzeug test client for TensorBoard with the Leaks plugin on a logdir (tests, benchmarks, tools)."""

from __future__ import annotations

import argparse

from tensorboard.backend import application
from tensorboard.plugins import base_plugin
from werkzeug.test import Client

from tb_leakfinder.plugin_loader import LeakfinderLoader

PREFIX = "/data/plugin/leakfinder"


def make_client(logdir: str, **flags: object) -> tuple[Client, object]:
    """(client, plugin) for a TensorBoard WSGI app serving only our plugin."""
    parser = argparse.ArgumentParser()
    LeakfinderLoader().define_flags(parser)
    namespace = parser.parse_args([])
    for key, value in flags.items():
        setattr(namespace, key, value)
    plugin = LeakfinderLoader().load(base_plugin.TBContext(logdir=logdir, flags=namespace))
    assert plugin is not None
    app = application.TensorBoardWSGI([plugin])
    return Client(app), plugin
