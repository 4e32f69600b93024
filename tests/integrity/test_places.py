"""The place gazetteer: countries, first-level regions and cities in it/en/zh, and how two places relate."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlab.integrity import SemanticIntegrityChecker
from memlab.integrity import places as P
from memlab.integrity.values import compare_values
from memlab.records import ConflictType
from memlab.store import MemoryStore
from memlab.testing import FakeEmbedder, ScriptedJudge


def _rel(a: str, b: str) -> str:
    pa, pb = P.resolve_place(a), P.resolve_place(b)
    assert pa is not None and pb is not None, (a, b)
    return P.place_relation(pa, pb)


@pytest.mark.parametrize(("name", "code"), [
    ("Lombardia", "IT-25"), ("Lombardy", "IT-25"), ("伦巴第", "IT-25"), ("Toscana", "IT-52"), ("Tuscany", "IT-52"),
    ("Sicilia", "IT-82"), ("Sicily", "IT-82"), ("广东", "CN-GD"), ("广东省", "CN-GD"), ("Guangdong", "CN-GD"),
    ("四川", "CN-SC"), ("California", "US-CA"), ("加利福尼亚州", "US-CA"), ("Baviera", "DE-BY"),
    ("Catalonia", "ES-CT"),
])
def test_regions_resolve_in_it_en_zh(name: str, code: str) -> None:
    p = P.resolve_place(name)
    assert p is not None and p.kind == "region" and code in p.regions, (name, p)
    assert p.countries == {code.split("-")[0]}


def test_a_city_that_is_also_a_region_name() -> None:
    # the large city wins ("Washington", "Valencia"); a small town does not hide the region ("Tuscany", Ontario)
    assert P.resolve_place("Valencia").kind == "city"  # type: ignore[union-attr]
    assert P.resolve_place("Tuscany").kind == "region"  # type: ignore[union-attr]
    # the article rule strips a word, never the start of a name ("Lombardia" is not "mbardia")
    assert P._place_key("Lombardia") == "lombardia" and P._place_key("la Spezia") == "spezia"
    assert P._place_key("L'Aquila") == "aquila"


@pytest.mark.parametrize(("a", "b", "rel"), [
    ("Milano", "Lombardia", "contained"), ("Milan", "Lombardy", "contained"), ("Turin", "Piedmont", "contained"),
    ("Firenze", "Toscana", "contained"), ("广州", "广东", "contained"), ("成都", "四川省", "contained"),
    ("Los Angeles", "California", "contained"), ("Barcelona", "Catalonia", "contained"),
    ("Torino", "Sicilia", "disjoint"), ("广州", "四川", "disjoint"), ("Seattle", "California", "disjoint"),
    ("Lombardia", "Francia", "disjoint"), ("Toscana", "Italia", "contained"), ("Sardegna", "Sardinia", "same"),
    ("Lombardia", "Sicilia", "disjoint"), ("Palermo", "Francia", "disjoint"),
])
def test_place_relation_with_regions(a: str, b: str, rel: str) -> None:
    assert _rel(a, b) == rel
    assert _rel(b, a) == rel  # symmetric


def test_an_unmatched_region_of_the_same_country_is_not_called_disjoint() -> None:
    # GeoNames calls Munich's region "Bavaria", which no ISO name is close enough to: unknown, not "disjoint"
    assert _rel("Monaco di Baviera", "Baviera") in ("contained", "different")


@pytest.mark.parametrize(("old", "new"), [
    ("Vivo a Milano", "Abito in Lombardia"),
    ("I live in Florence", "I live in Tuscany"),
    ("我住在深圳", "我住在广东"),
])
def test_a_city_inside_its_region_is_consistent(old: str, new: str) -> None:
    d = compare_values(old, new)
    assert d is not None and d.layer == "place" and d.contradiction is False, d


@pytest.mark.parametrize(("old", "new"), [
    ("Vivo a Torino", "Abito in Sicilia"),
    ("I live in Seattle", "I live in California"),
    ("我住在广州", "我住在四川"),
])
def test_a_city_outside_the_region_is_a_contradiction(old: str, new: str) -> None:
    d = compare_values(old, new)
    assert d is not None and d.layer == "place" and d.contradiction is True, d
    assert d.type is ConflictType.PLACE and d.info["regions"][1]


def test_gazetteer_is_loaded_once() -> None:
    P.resolve_place("Milano")
    before = P._cities.cache_info()
    for _ in range(5):
        P.resolve_place("Parigi")
        P.resolve_place("Lombardia")
    after = P._cities.cache_info()
    assert after.misses == before.misses and after.currsize == 1
    assert P._regions.cache_info().currsize == 1


def test_a_region_named_with_its_kind_and_a_chinese_district() -> None:
    assert _rel("Tacoma", "Washington State") == "contained"
    assert _rel("深圳南山区", "深圳") == "same"
    assert _rel("北京朝阳区", "上海") == "different"


@pytest.mark.parametrize(("old", "new", "alarm"), [
    ("Abito a Trastevere.", "Vivo a Roma.", False),  # a district the gazetteer does not know may lie in the city
    ("I live in Shoreditch.", "I live in East London.", False),
    ("I live in Nashville.", "I live in Memphis.", True),  # both known, neither inside the other
    ("Abito a Milano.", "Vivo a Napoli.", True),
])
def test_the_entities_level_calls_two_homes_apart_only_when_it_knows_both(tmp_path: Path, old: str, new: str,
                                                                        alarm: bool) -> None:
    with MemoryStore(tmp_path / "m.db", embedder=FakeEmbedder(dim=32, bag_of_words=True)) as store:
        store.add("u", old)
        item = store.add("u", new)
        res = SemanticIntegrityChecker(store, ScriptedJudge(default=0.0), similarity_threshold=-1.0).check(item)
    assert res.has_contradiction is alarm
    if alarm:
        assert res.contradictions[0].decided_by == "entities" and res.contradictions[0].urgency.value == "high"
