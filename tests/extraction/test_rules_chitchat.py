"""RuleExtractor keeps lasting facts of the user and drops chit-chat: one case per rule, in English and Italian (and
Chinese where the rule reads it), each with a statement kept and a chit-chat line dropped."""

from __future__ import annotations

import pytest

from memlab.extraction import RuleExtractor
from memlab.extraction.rules import durability, is_moment

R = RuleExtractor()


def _texts(message: str) -> list[str]:
    return [f.content for f in R.extract(message).facts]


# rule -> (kept EN, kept IT, dropped EN, dropped IT)
CASES = {
    "agreement, with an adverb": (
        "I totally love hiking in the Alps.", "Adoro fare escursioni sulle Alpi.",
        "I totally agree, Mel.", "Sono proprio d'accordo con te, Giulia."),
    "a feeling of the moment, past or chained": (
        "I was so happy when I adopted my dog Max in 2019.",
        "Ero felicissima quando ho adottato il mio cane Max nel 2019.",
        "I was so happy and thankful for all the support.", "Ero così felice e grata per tutto il supporto."),
    "a feeling about what comes next": (
        "I'm planning to adopt a child next year.", "Ho intenzione di adottare un bambino l'anno prossimo.",
        "I'm excited to see where pottery takes me.", "Sono emozionata di vedere dove mi porterà la ceramica."),
    "a wish of the moment (I'd love to)": (
        "I'm planning to adopt a child next year.", "Ho intenzione di adottare un bambino l'anno prossimo.",
        "I'd love to make something like this next!", "Mi piacerebbe tanto provarlo anch'io."),
    "a cheer is dropped, a habit is kept": (
        "I stay motivated by running every morning.", "Mi tengo motivata correndo ogni mattina.",
        "I'm staying positive!", "Tieni duro, non mollare!"),
    "a pleasantry after the other's name": (
        "Jon, I had to shut down my bank account.", "Giulia, ho chiuso il mio conto in banca.",
        "Jon, glad I could help!", "Giulia, non vedo l'ora di vederti!"),
    "a pointer at a picture, kept only for the user's own thing": (
        "Here's a photo of my horse painting I did recently.",
        "Ecco una foto del mio quadro con il cavallo che ho dipinto di recente.",
        "That pic was from a show I went to.", "Questa foto è di un concerto a cui sono andata."),
    "a remark about something named before": (
        "She gave me this necklace in 2010.", "Lei mi ha regalato questa collana nel 2010.",
        "It helps me show my feelings.", "Mi aiuta a esprimere le mie emozioni."),
    "a catch-up line with nothing specific": (
        "I've been busy training for the Boston marathon.",
        "Sono stata impegnata con gli allenamenti per la maratona di Roma.",
        "Been a busy week since we talked.", "Ho avuto una settimana pesante."),
    "an opinion with nothing lasting of the user": (
        "Painting landscapes is my favorite!", "Dipingere paesaggi è la cosa che preferisco.",
        "Painting's great for expressing myself.", "La pittura è fantastica per me."),
    "the user as the one a thing matters to": (
        "Family time matters to me.", "Il tempo in famiglia conta molto per me.",
        "Your words mean a lot to me.", "Le tue parole significano molto per me."),
    "few words, held by a name and a time or an absolute": (
        "I've been to Paris yesterday!", "Non sono mai stato in America.",
        "I'll never forget it!", "Non lo dimenticherò mai!"),
    "greetings and leave-taking": (
        "I've been working at the bakery for three years.", "Lavoro in panetteria da tre anni.",
        "I've got to go now, talk later!", "Devo scappare, ci sentiamo dopo!"),
    "how one is doing today": (
        "I broke my leg skiing last winter.", "Mi sono rotto una gamba sciando l'inverno scorso.",
        "I'm doing well, thanks for asking.", "Sto bene, grazie per avermelo chiesto."),
    "a compliment to what the other shared": (
        "I love the colors of the sea, so I paint beaches every summer.",
        "Adoro dipingere paesaggi.",
        "I love the colors in this painting!", "Adoro i colori di questo quadro!"),
    "disbelief at the news": (
        "Next month we're going to Japan.", "Il mese prossimo andiamo in Giappone.",
        "I can't believe it's been a year already.", "Non ci posso credere, è già passato un anno."),
    "reassurance of the other speaker": (
        "I've been working at the bakery for three years.", "Lavoro in panetteria da tre anni.",
        "Don't worry, I won't let anything get me down.", "Non preoccuparti, non mi lascerò abbattere."),
    "reassurance about how things will go": (
        "Still working on opening a dance studio.", "Sto ancora lavorando all'apertura della scuola di danza.",
        "I'm sure it'll be worth it in the end.", "Sono sicuro che andrà benissimo."),
}


@pytest.mark.parametrize("rule", list(CASES))
def test_lasting_fact_kept_and_chit_chat_dropped(rule: str) -> None:
    kept_en, kept_it, dropped_en, dropped_it = CASES[rule]
    assert _texts(kept_en), f"{rule}: {kept_en!r} lost"
    assert _texts(kept_it), f"{rule}: {kept_it!r} lost"
    assert _texts(dropped_en) == [], f"{rule}: {dropped_en!r} kept"
    assert _texts(dropped_it) == [], f"{rule}: {dropped_it!r} kept"


@pytest.mark.parametrize(("kept", "dropped"), [
    ("我喜欢画风景。", "我很喜欢这张照片。"),  # a liking in general vs a compliment to the picture shown
    ("我们下个月去日本。", "这让我很开心。"),  # a plan with a date vs a feeling of the moment
    ("我喜欢画风景。", "我同意你的看法。"),  # agreement with the other speaker
])
def test_chinese(kept: str, dropped: str) -> None:
    assert _texts(kept) and _texts(dropped) == []


@pytest.mark.parametrize(("message", "fact"), [
    ("I finished another pottery project - want to see a pic?", "I finished another pottery project"),
    ("Ho finito un altro progetto di ceramica - vuoi vedere una foto?", "Ho finito un altro progetto di ceramica"),
])
def test_a_question_after_a_dash_leaves_the_statement(message: str, fact: str) -> None:
    assert _texts(message) == [fact]


@pytest.mark.parametrize(("message", "fact"), [
    ("I ran a charity race last Saturday - it was really rewarding.", "I ran a charity race last Saturday"),
    ("Sono stata a Parigi a maggio, è stato bellissimo.", "Sono stata a Parigi a maggio"),
    ("Jon, I had to shut down my bank account.", "I had to shut down my bank account."),
    ("Giulia, ho chiuso il mio conto in banca.", "Ho chiuso il mio conto in banca."),
    ("Yesterday, I took the kids to the museum.", "Yesterday, I took the kids to the museum."),
])
def test_closing_comment_and_vocative_are_cut_from_the_text(message: str, fact: str) -> None:
    assert _texts(message) == [fact]


def test_an_event_of_today_outranks_talk_around_it() -> None:
    assert durability("I emailed some wholesalers today.") > durability("I emailed some wholesalers.")
    assert durability("Ho scritto ai grossisti oggi.") > durability("Ho scritto ai grossisti.")
    facts = _texts("I'm over the moon because I can grow my clothing store. I emailed some wholesalers and one said "
                   "yes today!")
    assert facts == ["I emailed some wholesalers and one said yes today!"]


def test_is_moment_examples() -> None:
    assert is_moment("Jon, glad I could help!") and is_moment("Marco, non vedo l'ora!")
    assert is_moment("I'm stoked and excited!") and is_moment("Sono felice e grata!")
    assert not is_moment("I stay motivated by reminding myself of my progress.")
    assert not is_moment("Resto concentrata scrivendo i miei obiettivi ogni mattina.")


@pytest.mark.parametrize(("message", "fact"), [
    ("Thanks, Mel. It's wild to think I only began transitioning this past spring - it's all still so new to me.",
     "I only began transitioning this past spring"),
    ("Funny thing is, I didn't even try drawing until my mid-twenties.",
     "I didn't even try drawing until my mid-twenties."),
    ("Pensa che ho iniziato a dipingere solo a maggio.", "Ho iniziato a dipingere solo a maggio."),
])
def test_a_frame_of_wonder_leaves_the_fact_inside(message: str, fact: str) -> None:
    assert _texts(message) == [fact]


@pytest.mark.parametrize("message", ["Ho iniziato a dipingere solo a maggio.", "Vado a Roma ogni estate."])
def test_an_italian_sentence_with_english_looking_words_is_read_as_italian(message: str) -> None:
    # "a" is an English article and an Italian preposition: the sentence was once read as English and lost
    assert _texts(message) == [message]


@pytest.mark.parametrize(("message", "fact"), [
    ("Yeah, I play clarinet! Started when I was young and it's been great.",
     "I play clarinet! Started when I was young and it's been great."),
    ("Got the tattoo a few years ago, it stands for freedom.", "Got the tattoo a few years ago, it stands for freedom."),
])
def test_a_clause_without_its_subject_is_read_with_the_statement_before_it(message: str, fact: str) -> None:
    # alone, "Started when I was young" does not say what was started
    assert _texts(message) == [fact]


@pytest.mark.parametrize(("message", "fact"), [
    ("Thanks. It's been almost a year since DoorDash let me go.", "It's been almost a year since DoorDash let me go."),
    ("It has been 2 years since I quit smoking.", "It has been 2 years since I quit smoking."),
])
def test_the_time_since_an_event_of_the_user_is_a_fact(message: str, fact: str) -> None:
    # "It's ..." opens a generic remark, but not when it dates an event of the user's
    assert _texts(message) == [fact]


@pytest.mark.parametrize("message", ["It's been a while since we talked!", "It's been a long week since Monday."])
def test_the_time_since_we_last_talked_is_no_fact(message: str) -> None:
    assert _texts(message) == []


@pytest.mark.parametrize(("message", "fact"), [
    ("Speaking of family, Peanut - my guinea pig and my only pet for three years now - has been my little cheerleader.",
     "Speaking of family, Peanut - my guinea pig and my only pet for three years now - has been my little cheerleader."),
])
def test_a_parenthesis_between_dashes_keeps_its_sentence_whole(message: str, fact: str) -> None:
    # cut at its dashes and at "and my", the pet's name and what it is were lost
    assert _texts(message) == [fact]
