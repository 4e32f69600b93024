"""Bad input must fail as a ``MemlabError`` with a clear message, before anything is written (issue 18, item 7).

Every test here failed on the code before its fix (a raw exception, or the bad input silently accepted).
"""

from __future__ import annotations

import pytest

from memlab import open_memlab
from memlab._validation import check_text, strip_control
from memlab.errors import InvalidInputError, MemlabError
from memlab.store.memory import MemoryStore
from memlab.testing import FakeEmbedder


@pytest.fixture
def store(tmp_path):
    st = MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder())
    yield st
    st.close()


# -- lone surrogates ------------------------------------------------------------------------------------------
LONE = "ciao \ud800"


def test_lone_surrogate_is_invalid_input_everywhere(store):
    with pytest.raises(InvalidInputError, match="lone surrogate U\\+D800"):
        check_text(LONE)
    with pytest.raises(InvalidInputError, match="surrogate"):
        store.add("alice", LONE)
    with pytest.raises(InvalidInputError, match="surrogate"):
        store.add("alice\udc80", "ciao")
    with pytest.raises(InvalidInputError, match="surrogate"):
        store.search("alice", LONE)
    assert store.count(include_inactive=True) == 0
    # the cleaning helper replaces them instead, so cleaned text is storable
    assert strip_control(LONE) == "ciao \ufffd"
    assert store.add("alice", strip_control(LONE)).text == "ciao \ufffd"


def test_turn_with_lone_surrogate_creates_no_chat(tmp_path):
    with open_memlab(tmp_path / "a.db", embedder=FakeEmbedder(), checks=False) as lab:
        with pytest.raises(InvalidInputError, match="surrogate"):
            lab.turn("alice", LONE)
        assert lab.chats.list("alice") == []
        assert lab.store.count("alice", include_inactive=True) == 0
        with pytest.raises(MemlabError):
            lab.chats.create("alice", title=LONE)
        assert lab.chats.list("alice") == []
        # a good turn still works afterwards
        assert lab.turn("alice", "Ciao, mi chiamo Alice e abito a Roma").response
