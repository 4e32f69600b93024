"""Chinese templates for :mod:`memlab.lab.augment`: persona attributes a Chinese user states about themself.

Written for memlab (no dataset text copied). The same construction as the English and Italian templates: one
attribute with one value in any two renderings is ``entailment``, with two values ``contradiction``; a statement
about *another* person, another attribute of the same value type (a birthday vs a wedding anniversary), a trip to
another city, or a different day's event is ``neutral``. A memory can also be a key/value line ("星座：射手座",
"性别：女"), as keyed memories are; a city entails its own province ("我住在杭州" ⊨ "我是浙江人") and contradicts a
city of another province.

:func:`one_pair` draws one pair from a ``random.Random``; :mod:`memlab.lab.augment` calls it for ``"zh"``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memlab.records import Label

__all__ = ["CHITCHAT", "one_pair", "wrap"]

_SIGNS = ["白羊座", "金牛座", "双子座", "巨蟹座", "狮子座", "处女座", "天秤座", "天蝎座", "射手座", "摩羯座", "水瓶座", "双鱼座"]
# (province, city): cities of several provinces, two per province so that "same province, other city" exists
_PLACES = [
    ("浙江", "杭州"), ("浙江", "宁波"), ("广东", "广州"), ("广东", "深圳"), ("四川", "成都"), ("四川", "绵阳"),
    ("江苏", "南京"), ("江苏", "苏州"), ("湖北", "武汉"), ("湖北", "宜昌"), ("福建", "福州"), ("福建", "厦门"),
    ("山东", "青岛"), ("山东", "济南"), ("河南", "郑州"), ("河南", "洛阳"), ("湖南", "长沙"), ("陕西", "西安"),
    ("辽宁", "大连"), ("辽宁", "沈阳"), ("云南", "昆明"), ("安徽", "合肥"), ("江西", "南昌"), ("广西", "南宁"),
]
_MUNICIPALITIES = ["北京", "上海", "天津", "重庆"]
_NAMES = ["李明", "王芳", "张伟", "刘洋", "陈静", "杨磊", "赵敏", "黄丽", "周杰", "吴涛", "小雨", "阿强"]
_JOBS = ["老师", "医生", "护士", "程序员", "律师", "会计", "厨师", "工程师", "设计师", "记者", "司机", "销售"]
_FOODS = ["火锅", "饺子", "牛肉面", "寿司", "披萨", "小笼包", "烤鸭", "麻辣烫"]
_PETS = [("只", "猫"), ("只", "狗"), ("个", "孩子"), ("个", "哥哥"), ("个", "妹妹")]
_DAYS = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"]
_OTHERS = ["我男朋友", "我女朋友", "我老公", "我老婆", "我妈妈", "我爸爸", "我同事", "我室友", "我闺蜜", "你"]


def _num(n: int, rng: random.Random) -> str:
    """A number as digits or in Chinese numerals (三十四)."""
    if rng.random() < 0.5:
        return str(n)
    import cn2an  # lazy: only generating Chinese pairs needs it

    return str(cn2an.an2cn(n))


def _sign(v: str, rng: random.Random) -> str:
    return v if rng.random() < 0.7 else v[:2]  # "射手座" or the short "射手"


def _city(place: tuple[str, str] | str) -> str:
    return place if isinstance(place, str) else place[1]


Render = Callable[[object, random.Random], str]


@dataclass(frozen=True, slots=True)
class _Attr:
    name: str
    sample: Callable[[random.Random], object]
    differ: Callable[[random.Random, object], object]
    render: Sequence[Render]
    other: Sequence[Render] = ()  # the same attribute of someone else, or a neighbouring fact: neutral


def _pick_other(pool: Sequence[object]) -> Callable[[random.Random, object], object]:
    return lambda rng, v: rng.choice([p for p in pool if p != v])


def _place_sample(rng: random.Random) -> object:
    return rng.choice(_MUNICIPALITIES) if rng.random() < 0.2 else rng.choice(_PLACES)


def _place_other(rng: random.Random, v: object) -> object:
    """A place in another province (a contradiction of where one lives)."""
    prov = v if isinstance(v, str) else v[0]
    pool: list[object] = [p for p in _PLACES if p[0] != prov] + [m for m in _MUNICIPALITIES if m != prov]
    return rng.choice(pool)


def _place_render(v: object, rng: random.Random) -> str:
    if isinstance(v, str):
        return rng.choice([f"我住在{v}。", f"我是{v}人。", f"地点：{v}", f"我一直在{v}生活。", f"我家在{v}。"])
    prov, city = v  # type: ignore[misc]
    return rng.choice([
        f"我住在{city}。", f"我家在{prov}{city}。", f"地点：{prov} {city}", f"我是土生土长的{city}人。",
        f"我在{city}工作，也住在这里。", f"我现在住在{prov}省{city}市。", f"我是{prov}人，住在{city}。",
    ])


def _gender_render(v: object, rng: random.Random) -> str:
    male = {
        "性别：男", "我是男生。", "我是个男的。", "作为一个男人，我觉得压力挺大的。", "我和我老婆结婚五年了。",
        "我女朋友昨天生日。", "我是一个普通的上班族男生。", "哥们我是纯爷们。",
    }
    female = {
        "性别：女", "我是女生。", "我是个女孩子。", "作为一个女生，我觉得安全最重要。", "我和我老公结婚五年了。",
        "我男朋友昨天生日。", "我是一个普通的上班族女生。", "姐妹们，我也是女生。",
    }
    return rng.choice(sorted(male if v == "male" else female))


_ATTRS: list[_Attr] = [
    _Attr(
        "zodiac", lambda r: r.choice(_SIGNS), _pick_other(_SIGNS),
        [
            lambda v, r: f"我是{_sign(str(v), r)}。", lambda v, r: f"我的星座是{v}。", lambda v, r: f"星座：{v}",
            lambda v, r: f"作为一个{_sign(str(v), r)}，我很懂这种感觉。", lambda v, r: f"我就是{_sign(str(v), r)}的。",
            lambda v, r: f"我{_sign(str(v), r)}，你呢？",
        ],
        [
            lambda v, r: f"{r.choice(_OTHERS)}是{_sign(str(v), r)}。",
            lambda v, r: f"{_sign(str(v), r)}的人都很有个性。",
            lambda v, r: f"你也是{_sign(str(v), r)}吗？",
        ],
    ),
    _Attr(
        "gender", lambda r: r.choice(["male", "female"]), lambda r, v: "female" if v == "male" else "male",
        [_gender_render],
        [
            lambda v, r: "你是男生还是女生？", lambda v, r: "我们班女生比男生多。",
            lambda v, r: f"{r.choice(['我妹妹', '我姐姐', '我妈妈'])}是个很温柔的女生。",
            lambda v, r: f"{r.choice(['我哥哥', '我弟弟', '我爸爸'])}是个很幽默的男生。",
        ],
    ),
    _Attr(
        "home", _place_sample, _place_other, [_place_render],
        [
            lambda v, r: f"我下周去{_city(_place_other(r, v))}出差。",  # type: ignore[arg-type]
            lambda v, r: f"{r.choice(_OTHERS)}住在{_city(_place_other(r, v))}。",  # type: ignore[arg-type]
            lambda v, r: f"{_city(_place_other(r, v))}的天气真好。",  # type: ignore[arg-type]
            lambda v, r: f"我去年去{_city(_place_other(r, v))}旅游了。",  # type: ignore[arg-type]
        ],
    ),
    _Attr(
        "birthday", lambda r: (r.randint(1, 12), r.randint(1, 28)),
        lambda r, v: (r.randint(1, 12), r.choice([d for d in range(1, 29) if d != v[1]])),  # type: ignore[index]
        [
            lambda v, r: f"我的生日是{v[0]}月{v[1]}日。",  # type: ignore[index]
            lambda v, r: f"我是{v[0]}月{v[1]}号生的。",  # type: ignore[index]
            lambda v, r: f"我出生于{r.randint(1970, 2004)}年{v[0]}月{v[1]}日。",  # type: ignore[index]
            lambda v, r: f"每年{v[0]}月{v[1]}号我都过生日。",  # type: ignore[index]
        ],
        [
            lambda v, r: f"我们的结婚纪念日是{v[0]}月{v[1]}日。",  # type: ignore[index]
            lambda v, r: f"我妈妈的生日是{r.randint(1, 12)}月{r.randint(1, 28)}日。",
        ],
    ),
    _Attr(
        "age", lambda r: r.randint(18, 70), lambda r, v: r.choice([a for a in range(18, 71) if abs(a - int(v)) >= 3]),  # type: ignore[call-overload]
        [
            lambda v, r: f"我今年{_num(int(v), r)}岁。",  # type: ignore[call-overload]
            lambda v, r: f"我已经{_num(int(v), r)}岁了。",  # type: ignore[call-overload]
            lambda v, r: f"年龄：{v}岁",
        ],
        [lambda v, r: f"我儿子今年{_num(r.randint(1, 17), r)}岁。", lambda v, r: f"我爸爸今年{_num(int(v) + 25, r)}岁。"],  # type: ignore[call-overload]
    ),
    _Attr(
        "name", lambda r: r.choice(_NAMES), _pick_other(_NAMES),
        [lambda v, r: f"我叫{v}。", lambda v, r: f"我的名字是{v}。", lambda v, r: f"大家都叫我{v}。"],
        [lambda v, r: f"我妹妹叫{r.choice(_NAMES)}。", lambda v, r: f"我的好朋友叫{r.choice(_NAMES)}。"],
    ),
    _Attr(
        "job", lambda r: r.choice(_JOBS), _pick_other(_JOBS),
        [lambda v, r: f"我是一名{v}。", lambda v, r: f"我的工作是{v}。", lambda v, r: f"我当{v}已经五年了。"],
        [lambda v, r: f"{r.choice(_OTHERS)}是{r.choice(_JOBS)}。", lambda v, r: f"我小时候想当{r.choice(_JOBS)}。"],
    ),
    _Attr(
        "count", lambda r: (r.randint(1, 4), r.choice(_PETS)),
        lambda r, v: (r.choice([n for n in range(1, 5) if n != v[0]]), v[1]),  # type: ignore[index]
        [
            lambda v, r: f"我有{'两' if v[0] == 2 else _num(v[0], r)}{v[1][0]}{v[1][1]}。",  # type: ignore[index]
            lambda v, r: f"我家里有{'两' if v[0] == 2 else _num(v[0], r)}{v[1][0]}{v[1][1]}。",  # type: ignore[index]
        ],
        [lambda v, r: f"我朋友有{'两' if v[0] == 2 else _num(v[0], r)}{v[1][0]}{v[1][1]}。"],  # type: ignore[index]
    ),
    _Attr(
        "food", lambda r: r.choice(_FOODS), _pick_other(_FOODS),
        [lambda v, r: f"我最喜欢吃{v}。", lambda v, r: f"我最爱的食物是{v}。"],
        [lambda v, r: f"我昨天吃了{r.choice(_FOODS)}。", lambda v, r: f"{r.choice(_OTHERS)}最喜欢吃{r.choice(_FOODS)}。"],
    ),
]

# (positive, negative): a statement and its negation contradict
_NEGATIONS = [
    ("我结婚了。", "我还没结婚。"), ("我有车。", "我没有车。"), ("我抽烟。", "我不抽烟。"),
    ("我喜欢吃{f}。", "我不喜欢吃{f}。"), ("我吃肉。", "我是素食者，从不吃肉。"), ("我有孩子。", "我没有孩子。"),
    ("我每天晚饭都喝一杯酒。", "我从不喝酒。"), ("我会开车。", "我不会开车。"), ("我每周都去健身房。", "我从来不去健身房。"),
    ("项目已经完成了。", "项目还没开始。"), ("我对{f}过敏。", "我吃{f}从来没问题。"), ("我养了一只猫。", "我从来没养过宠物。"),
]
_EVENTS = [lambda km, d: f"我{d}跑了{km}公里。", lambda km, d: f"{d}我走了{km}公里。"]

CHITCHAT = (
    ["是的，", "哈哈，", "嗯，", "哦，", "说实话，", "真的吗？", "对啊，"],
    ["你呢？", "你有什么爱好？", "你做什么工作？", "你是哪里人？", "哈哈哈", "你去过吗？", "挺好的。"],
)
"""Openers and closing questions that wrap a statement as a chat turn without adding a claim."""


def one_pair(rng: random.Random) -> tuple[str, str, Label, str]:
    """One Chinese pair: ``(premise, hypothesis, label, attribute)``, drawn from ``rng``."""
    kind = rng.random()
    if kind < 0.1:
        pos, neg = rng.choice(_NEGATIONS)
        f = rng.choice(_FOODS)
        pos, neg = pos.format(f=f), neg.format(f=f)
        return (pos, neg, Label.CONTRADICTION, "negation") if rng.random() < 0.5 else (neg, pos, Label.CONTRADICTION, "negation")
    if kind < 0.14:
        d1, d2 = rng.sample(_DAYS, 2)
        k1, k2 = rng.sample(range(2, 21), 2)
        return rng.choice(_EVENTS)(k1, d1), rng.choice(_EVENTS)(k2, d2), Label.NEUTRAL, "event"
    attr = rng.choice(_ATTRS)
    value = attr.sample(rng)
    premise = rng.choice(list(attr.render))(value, rng)
    roll = rng.random()
    if roll < 0.3:
        if attr.name == "home" and not isinstance(value, str) and rng.random() < 0.4:
            prov = value[0]  # type: ignore[index]
            return premise, rng.choice([f"我是{prov}人。", f"我住在{prov}。"]), Label.ENTAILMENT, "home_province"
        return premise, rng.choice(list(attr.render))(value, rng), Label.ENTAILMENT, attr.name
    if roll < 0.65:
        return premise, rng.choice(list(attr.render))(attr.differ(rng, value), rng), Label.CONTRADICTION, attr.name
    if roll < 0.85 and attr.other:
        return premise, rng.choice(list(attr.other))(value, rng), Label.NEUTRAL, attr.name
    other_attr = rng.choice([a for a in _ATTRS if a.name != attr.name])
    return premise, rng.choice(list(other_attr.render))(other_attr.sample(rng), rng), Label.NEUTRAL, attr.name


def wrap(text: str, rng: random.Random) -> str:
    """``text`` as a chat turn: sometimes an opener, sometimes a closing question (no claim added; key/value
    lines such as "星座：射手座" stay as they are)."""
    if "：" in text:
        return text
    out = text
    if rng.random() < 0.5:
        out = rng.choice(CHITCHAT[0]) + out
    if rng.random() < 0.6:
        out = out + rng.choice(CHITCHAT[1])
    return out
