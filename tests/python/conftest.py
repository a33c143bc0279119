"""Shared by the Python package's tests (tests/python/meson.build sets
PYTHONPATH to the build tree's package, REDISTPLAN, SPECS_DIR and
README)."""
import os

import pytest


@pytest.fixture(scope="session")
def redistplan():
    return os.environ["REDISTPLAN"]


@pytest.fixture(scope="session")
def specs_dir():
    return os.environ["SPECS_DIR"]
