"""Dashboard tests run in-process (AppTest) as if served on loopback, whatever the working directory: the login
tests of ``test_security.py`` change ``server.address`` themselves."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def loopback_address():
    from streamlit import config

    old = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    yield config
    config.set_option("server.address", old)
