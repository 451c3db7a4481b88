"""tb_leakfinder: a TensorBoard plugin that finds memory leaks in XProf profiles."""

from setuptools import find_packages, setup

setup(
    name="tb_leakfinder",
    version="0.1.0",
    description="Find memory leaks in ML programs from their XProf profiles, in TensorBoard.",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["tb_leakfinder", "tb_leakfinder.*"]),
    package_data={
        "tb_leakfinder.proto": ["*.proto", "schema.binpb"],
        "tb_leakfinder.static": ["*.js", "*.css", "*.html"],
    },
    install_requires=[
        "tensorboard>=2.12",
        "tensorboard-plugin-profile>=2.13",
        "protobuf>=4.21",
        "werkzeug>=2.0",
        "numpy>=1.22",
    ],
    extras_require={
        "capture": ["tensorflow-cpu", "jax"],
        "test": ["pytest", "hypothesis", "ruff", "fsspec", "grpcio-tools"],
    },
    entry_points={
        "tensorboard_plugins": ["leakfinder = tb_leakfinder.plugin_loader:LeakfinderLoader"],
        "console_scripts": ["tb-leakfinder = tb_leakfinder.views.cli:main"],
    },
)
