"""Judge registry: build a contradiction judge by name."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memlab.errors import InvalidInputError, UnknownComponentError
from memlab.protocols import Judge

__all__ = ["available_judges", "load_judge", "register_judge", "resolve_judge"]

_FACTORIES: dict[str, Callable[..., Judge]] = {}


def register_judge(name: str, factory: Callable[..., Judge]) -> None:
    """Register ``factory(**kwargs) -> Judge`` under ``name`` (overrides an existing entry).

    Example:
        >>> from memlab.testing import ScriptedJudge
        >>> register_judge("always-no", lambda **kw: ScriptedJudge(lambda a, b: 0.0))
        >>> load_judge("always-no").judge([("a", "b")])[0].probability
        0.0
    """
    _FACTORIES[name] = factory


def _default(**kwargs: Any) -> Judge:
    from memlab.judges.default import DEFAULT_WEIGHTS, MULTILINGUAL_WEIGHTS, DefaultJudge
    from memlab.judges.routed import LanguageRoutedJudge

    if kwargs.get("weights") is not None:  # one trained model (e.g. a train-judge output directory)
        return DefaultJudge(**kwargs)
    kwargs.pop("weights", None)
    name = kwargs.pop("name", "default")
    return LanguageRoutedJudge(
        DefaultJudge(DEFAULT_WEIGHTS, name=f"{name}/english", **kwargs),
        DefaultJudge(MULTILINGUAL_WEIGHTS, name=f"{name}/multilingual", **kwargs),
        name=name,
    )


def _english(**kwargs: Any) -> Judge:
    from memlab.judges.default import DEFAULT_WEIGHTS, DefaultJudge

    return DefaultJudge(DEFAULT_WEIGHTS, **{"name": "english", **kwargs})


def _multilingual(**kwargs: Any) -> Judge:
    from memlab.judges.default import MULTILINGUAL_WEIGHTS, DefaultJudge

    return DefaultJudge(MULTILINGUAL_WEIGHTS, **{"name": "multilingual", **kwargs})


def _ensemble(**kwargs: Any) -> Judge:
    from memlab.judges.default import DEFAULT_WEIGHTS, MULTILINGUAL_WEIGHTS, DefaultJudge
    from memlab.judges.ensemble import ENSEMBLE_THRESHOLD, AveragedJudge
    from memlab.judges.routed import LanguageRoutedJudge

    name = kwargs.pop("name", "ensemble")
    multilingual = DefaultJudge(MULTILINGUAL_WEIGHTS, name=f"{name}/multilingual", **kwargs)
    english = AveragedJudge(
        [DefaultJudge(DEFAULT_WEIGHTS, name=f"{name}/english", **kwargs), multilingual],
        decision_threshold=ENSEMBLE_THRESHOLD,
        name=f"{name}/english+multilingual",
    )
    return LanguageRoutedJudge(english, multilingual, name=name)


def _majority(**kwargs: Any) -> Judge:
    from memlab.judges.baselines import MajorityJudge

    return MajorityJudge(**kwargs)


def _lexical(**kwargs: Any) -> Judge:
    from memlab.judges.baselines import LexicalJudge

    return LexicalJudge(**kwargs)


def _llm(llm: Any = None, **kwargs: Any) -> Judge:
    from memlab.judges.llm import LLMJudge

    if llm is None:
        from memlab.llm import load_llm

        llm = load_llm(kwargs.pop("settings", None))
        if llm is None:
            raise InvalidInputError(
                "load_judge('llm') needs an LLM: pass llm=<memlab.protocols.LLM> or configure one "
                "(MEMLAB_LLM_BACKEND=ollama|openai and MEMLAB_LLM_MODEL). Got no LLM configured instead."
            )
    return LLMJudge(llm, **kwargs)


_BUILTIN: dict[str, Callable[..., Judge]] = {
    "default": _default,
    "english": _english,
    "multilingual": _multilingual,
    "ensemble": _ensemble,
    "majority": _majority,
    "lexical": _lexical,
    "llm": _llm,
}


def available_judges() -> list[str]:
    """Registered names, plus the ``hf:<model id or local path>`` form.

    Example:
        >>> {"default", "hf:<model>", "lexical", "llm", "majority"} <= set(available_judges())
        True
    """
    return sorted({*_BUILTIN, *_FACTORIES, "hf:<model>"})


def load_judge(name: str = "default", **kwargs: Any) -> Judge:
    """Build the judge registered as ``name``.

    Names: ``default`` (memlab's trained judges, shipped in the package, loaded lazily on first use: each pair
    goes to the ``english`` or the ``multilingual`` one by its detected language, see
    :class:`~memlab.judges.routed.LanguageRoutedJudge`; with ``weights=DIR`` one model trained by
    ``memlab train-judge``), ``ensemble`` (English pairs judged by the mean of both trained judges' probabilities,
    more accurate on dev and about 4x slower, see :mod:`memlab.judges.ensemble`; other pairs as ``default``),
    ``hf:<model id or local path>`` (any Hugging Face sequence-classification NLI model; label mapping from
    its config), ``majority`` / ``lexical`` (baselines), ``llm`` (an LLM judge: pass ``llm=`` or configure
    one in the settings), or any name added with :func:`register_judge`.

    Args:
        name: the judge name.
        **kwargs: passed to the judge's constructor (e.g. ``quantize=None``, ``batch_size=64``, ``llm=...``).

    Returns:
        An object implementing :class:`~memlab.protocols.Judge` (``name``, ``judge(pairs)``, ``get_params()``).

    Raises:
        UnknownComponentError: the name is not registered.
        InvalidInputError: ``name`` is not a non-empty string, or ``llm`` without an LLM.
        JudgeError: the judge's files are missing or malformed.

    Example:
        >>> load_judge("default").name
        'default'
        >>> load_judge("nope")
        Traceback (most recent call last):
        ...
        memlab.errors.UnknownComponentError: Unknown judge 'nope'. Valid names: ...
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(
            f"The 'name' parameter of load_judge must be a non-empty str. Got {name!r} instead."
        )
    if name.startswith("hf:"):
        model = name[3:].strip()
        if not model:
            raise InvalidInputError(
                f"The 'name' parameter of load_judge must name a model after 'hf:'. Got {name!r} instead."
            )
        _check_hf_model(name, model)
        from memlab.judges.hf import HFJudge

        return HFJudge(model, **kwargs)
    factory = _FACTORIES.get(name) or _BUILTIN.get(name)
    if factory is None:
        raise UnknownComponentError("judge", name, available_judges())
    return factory(**kwargs)


# a Hugging Face Hub id: "name" or "org/name"
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")


def _check_hf_model(name: str, model: str) -> None:
    """Refuse an ``hf:`` reference that cannot be a model before anything runs with it (the model itself loads
    lazily, at the first judgement, where a bad path would only fail the background checks).

    A local path (absolute, ``./``, ``../``, ``~``, or existing) must be a folder with a ``config.json``; anything
    else must look like a Hub id (``name`` or ``org/name``).
    """
    expanded = Path(model).expanduser()
    if model.startswith(("/", "./", "../", "~", ".\\")) or expanded.exists():
        if not (expanded / "config.json").is_file():
            raise InvalidInputError(
                f"Judge {name!r}: {model!r} is not a model folder (no config.json in it)."
            )
    elif _HUB_ID.fullmatch(model) is None:
        raise InvalidInputError(
            f"Judge {name!r}: {model!r} is neither a model folder nor a Hugging Face model id ('org/name')."
        )


def resolve_judge(
    judge: Judge | str | None = None, *, settings: Any = None, **kwargs: Any
) -> tuple[Judge | None, str]:
    """The judge to use and its name: an instance as given, a name built with :func:`load_judge`, ``None`` for the
    product default (``settings.judge``; ``Settings().judge`` when no settings are given), ``"none"`` for no judge.

    One place for "a judge given as a name or an instance" (the checker, the app, the eval tasks, the benches).

    Returns:
        ``(judge, name)``; ``(None, "none")`` for ``"none"``.

    Example:
        >>> from memlab.testing import ScriptedJudge
        >>> j = ScriptedJudge(name="s")
        >>> resolve_judge(j) == (j, "s")
        True
        >>> resolve_judge("none")
        (None, 'none')
    """
    if judge is None:
        from memlab.config import Settings

        judge = (settings or Settings()).judge
    if isinstance(judge, str):
        if judge == "none":
            return None, "none"
        return load_judge(judge, **kwargs), judge
    return judge, str(getattr(judge, "name", None) or type(judge).__name__)
