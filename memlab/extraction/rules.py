"""The offline rule extractor (default): first-person statements in Italian, English (and basic Chinese).

How a message becomes facts:

1. Clean (control characters removed, NFC), cut at ``max_chars``, split into sentences.
2. Skip sentences that cannot state a fact about the user: questions, conditionals ("se ...", "if ..."),
   pure reactions ("grazie!", "wow, that's cool"), and very long run-ons (> ``MAX_SENTENCE_CHARS``).
3. **Slots** from entities: ``memlab.entities.extract_entities`` (the same code the contradiction
   detector uses) finds dates, numbers with units, names, places and organisations with the attribute
   they describe; first-person ones fill slots (``name`` -> ``preferred_name``, ``born``/``birthday`` ->
   ``birthday``, ``lives_in`` -> ``home_city``, ``works_at`` -> ``employer``, ``height`` -> ``height_cm`` ...).
   Small regex rules add slots entities do not cover (job title, diet, marital status, favourites).
   A slot fact gets the slot's template text ("L'utente si chiama Li Si") and a confidence from the rule:
   0.9 for explicit statements, 0.95 when the user corrects themselves ("anzi", "actually"), -0.2 when hedged
   ("forse", "credo", "maybe"). Negated statements ("non abito più a Roma") never fill a slot.
4. **Free facts**: other first-person statements with at least ``min_content_words`` content words (one fewer
   with a name or number, one fewer with a time anchor or a habit) become facts with their own (cleaned) text,
   confidence 0.6 (+0.1 with an entity, -0.15 when hedged). Preferences ("mi piace", "preferisco", "I love") get
   type ``preference``; facts about other people (``mia sorella si chiama Anna``) type ``relation``. Chit-chat
   gives none: reactions to the other speaker ("I totally agree", "sono d'accordo"), feelings of the moment ("I was
   so happy and thankful", "sono felice e grata"), intentions and cheers ("I'd love to ...", "mi piacerebbe",
   "keep it up"), greetings and leave-taking, compliments to what the other shared ("I love the colors in this
   painting"), remarks about something named before ("It helps me show my feelings"), opinions with nothing
   lasting of the user ("Painting's great for expressing myself") and catch-up lines with nothing specific ("Been
   a busy week since we talked"). A closing comment ("- it was really rewarding") and a vocative ("Jon, ...")
   are cut from the fact's text.
5. Tone and fatigue come from :func:`memlab.extraction.signals.measure`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from memlab._validation import strip_control
from memlab.errors import InvalidInputError
from memlab.extraction.records import ExtractionResult, Fact
from memlab.extraction.signals import keywords, measure
from memlab.extraction.slots import render_slot
from memlab.text import ABSOLUTE_OR_FIRST, detect_lang, is_question, split_sentences, statements, word_count

__all__ = ["MAX_MESSAGE_CHARS", "MAX_SENTENCE_CHARS", "RuleExtractor", "durability", "is_moment"]

log = logging.getLogger(__name__)

#: Default longest message read (characters). Longer messages are truncated (or rejected, see ``oversize``).
MAX_MESSAGE_CHARS = 20_000
#: Sentences longer than this are not turned into facts (run-ons, pasted text).
MAX_SENTENCE_CHARS = 400

_ATTR_SLOT = {
    "name": "preferred_name",
    "born": "birthday",
    "birthday": "birthday",
    "wedding": "wedding_date",
    "lives_in": "home_city",
    "from_place": "hometown",
    "works_at": "employer",
    "height": "height_cm",
    "weight": "weight_kg",
    "age": "age",
}


def _rx(p: str) -> re.Pattern[str]:
    return re.compile(p, re.IGNORECASE)


_QUESTION_START = _rx(
    r"^(?:chi|cosa|che cosa|come|dove|quando|perch[eé]|quale|quali|quanto|quanti|quanta|quante|"
    r"who|what|where|when|why|how|which|do you|did you|are you|have you|can you|could you|would you|is it|"
    r"what's|how's)\b"
)
# what did not happen: "I'd never have started otherwise", "I would have gone", "avrei ..."
_COUNTERFACTUAL = _rx(r"\b(?:i'?d|i would|we'?d|we would)\s+(?:never\s+|not\s+)?have\s+\w+(?:ed|en|ne|un)\b|"
                      r"\b(?:avrei|avremmo) (?:mai )?\w+(?:ato|uto|ito)\b")
_CONDITIONAL = _rx(r"^(?:se|if|quando sarò|when i grow up|magari|imagine|immagina)\b")
_REACTION = _rx(
    r"^(?:grazie|thanks?|thank you|wow|haha\w*|ahah\w*|lol|omg|ciao|hi|hey|hello|buongiorno|buonasera|buonanotte|"
    r"good (?:morning|night|luck)|congrat\w*|complimenti|that'?s|thats|sounds|so glad|glad|nice|awesome|great|"
    r"cool|bye|see you|take care|same here|me too|anch'io|anche io|ok\w*|sure|yeah|yes|no|s[iì]|bello|bellissimo|"
    r"fantastico|ottimo|perfetto|esatto|vero)\b[\s!.,]*$"
)
# a first-person predicate that only reacts to the other speaker ("I'm glad", "I hope", "I agree")
_SOCIAL = _rx(
    r"\bi(?:'m| am) (?:so |really |very )?(?:glad|happy for you|sorry to hear|proud of you|excited for you|"
    r"here for you|thankful for you)\b|\bi(?:'d| would)? (?:(?:100%|totally|really|completely|fully|so|just|also|"
    r"absolutely|definitely|truly) )?(?:hope|agree|appreciate|bet|guess so|see|understand|can imagine|know what you mean|"
    r"can'?t wait to (?:see|hear))\b|\b(?:sono contento per te|mi dispiace per|spero che|"
    r"sono (?:(?:totalmente|pienamente|proprio|assolutamente) )?d'accordo|ti capisco|immagino|"
    r"(?:ti )?(?:ringrazio|apprezzo) (?:molto |tanto |davvero )?(?:il tuo|la tua|i tuoi|le tue|che)\b)"
    r"|我同意|我理解你|我也这么(?:想|觉得)"
)
# not durable: a feeling of the moment, an intention for the next minutes, encouragement, a pleasantry or a pointer
# at a picture ("I'm so excited", "I'll let you know", "I'll keep going", "Can't wait", "Check out this pic"). They are
# not facts about the user: stored, the integrity check compared them with everything (LoCoMo dev: most free facts
# the observations do not hold were of this kind, and so were most false alarms). Plans ("I'm planning to adopt")
# and events ("I went to a support group") are kept. Checked on the sentence without its lead ("well", "haha" ...).
_FEELING_EN = (
    r"excited|happy|glad|thankful|grateful|stoked|pumped|thrilled|hopeful|optimistic|proud|relieved|touched|inspired|"
    r"blessed|lucky|amazed|impressed|curious|sorry|motivated|determined|psyched|eager|speechless|moved|honou?red|"
    r"humbled|good|great|fine|ok|okay|positive|confident|ready|on it|in awe|scared|nervous|worried|anxious|stressed|"
    r"sad|upset|bummed|overwhelmed|tired|exhausted|over the moon|liberated|empowered|jealous|envious|a mix of"
)
_FEELING_IT = (
    r"felice|content[oa]|emozionat[oa]|grat[oa]|orgoglios[oa]|entusiast[ao]|ottimista|carich[oa]|pront[oa]|"
    r"spaventat[oa]|preoccupat[oa]|nervos[oa]|triste|stanc[oa]|agitat[oa]|sollevat[oa]|felicissim[oa]|invidios[oa]|"
    r"gelos[oa]|curios[oa]|impressionat[oa]|ispirat[oa]|motivat[oa]|determinat[oa]|commoss[oa]|fortunat[oa]|"
    r"colpit[oa]|toccat[oa]|sorpres[oa]|fiducios[oa]|positiv[oa]"
)
_FEELING_ADV = (r"so|really|very|super|pretty|kinda|a bit|totally|just|truly|also|still|a little|extremely|incredibly|"
                r"absolutely|beyond|quite|così|molto|davvero|proprio|tanto|un po'|veramente")
# one or more feeling words, chained ("so happy and thankful", "felice e grata")
_FEELING = _rx(
    rf"^(?:i(?:'m| am)|i feel|i(?:'m| am) feeling|i felt|feeling|i was|i(?:'ve| have) been|i got|i get)\s+"
    rf"(?:(?:{_FEELING_ADV})\s+)*(?:{_FEELING_EN})\b"
    rf"(?:\s*(?:,|and|&)\s*(?:(?:{_FEELING_ADV})\s+)*(?:{_FEELING_EN})\b)*(?P<rest>.*)$"
    rf"|^(?:sono|mi sento|ero|mi sentivo|mi sono sentit[oa]|sono stat[oa])\s+(?:(?:{_FEELING_ADV})\s+)*"
    rf"(?:{_FEELING_IT})\b(?:\s*(?:,|e)\s*(?:(?:{_FEELING_ADV})\s+)*(?:{_FEELING_IT})\b)*(?P<rest_it>.*)$"
)
# what a feeling is about when it only looks ahead at the next news ("I'm excited to see where it takes me")
_FEELING_AHEAD = _rx(r"^\s*(?:to (?:see|hear|know|find out|watch)|about (?:it|this|that)|for (?:you|him|her|them)|"
                     r"di (?:vedere|sapere|sentire|scoprire)|per (?:te|lui|lei|loro|voi))\b")
_MOMENT = _rx(
    # encouragement and determination, as a cheer or an intention ("Keep going!", "I'm staying positive", "I'll keep
    # pushing"); a habit stays a fact ("I stay motivated by reminding myself of my progress", "... so I stay focused")
    r"^(?:(?:i'?ll|i will|i'?m|i am|we'?re|we'?ll|i'?m gonna|i am gonna|gonna|gotta|let'?s|just|always|so|and|"
    r"(?:i |we )?(?:need|have|want|got) to|(?:i'?m |i am )?(?:trying|going) to)\s+)*"
    r"(?:keep (?:going|pushing|on|at it|chasing|plugging|working|trying|moving|it up)|stay(?:ing)? (?:positive|focused|"
    r"determined|optimistic|upbeat|strong|motivated|hopeful)|hang in there|push(?:ing)? forward)\b"
    r"|\b(?:never (?:give up|quit)|(?:not|never) gonna (?:give up|quit|stop)|won'?t (?:give up|quit)|do (?:my|our) best|"
    r"give it (?:my|our) (?:best|all)|(?:won'?t|not gonna|never) let (?:anything|anyone|it|that) get me down)\b"
    # reassurance of the other speaker ("Don't worry, ...", "Non preoccuparti, ...")
    r"|^(?:don'?t worry|no worries|non preoccuparti|non ti preoccupare|tranquill[oa])\b"
    # intentions of the moment
    r"|^(?:i'?ll|i will|i'?m gonna|i am gonna|i'?m going to|gonna|will)\s+(?:definitely |surely |totally )?"
    r"(?:have to |need to |gotta )?"
    r"(?:let you know|keep you posted|keep|stay|check|try|think about|look into|see|give it|be there|catch you|talk|"
    r"tell you|send|show you|take a look|have a look|remember|consider|get back)\b"
    r"|\bi'?d (?:really |so |totally )?love to\b|\bi'?d like to (?:check|see|try|join|hear|know|visit|come|meet|give)\b"
    r"|^(?:i )?(?:can'?t wait|cannot wait|(?:am |'m )?looking forward to)\b|^(?:i )?(?:might|may|should) (?:try|check|give)\b"
    r"|\bi'?m off to\b|^(?:i )?(?:wish|hope)\b|\bgotta (?:tell|show|go|run|say)\b"
    # greetings and leave-taking, disbelief, reassurance ("I'm doing well", "I've got to go, talk later", "I can't
    # believe", "I'm sure it'll be worth it")
    r"|^(?:i'?m|i am) doing (?:well|good|great|fine|ok|okay|alright)\b|\b(?:(?:got|have|need) to|gotta) (?:go|run)\b|"
    r"\btalk (?:to you )?(?:later|soon)\b|\bcatch you later\b|^(?:i )?can'?t believe\b|\btime flies\b|"
    r"^(?:i'?m|i am) not sure\b|^i know,? right\b|"
    r"^(?:i'?m|i am) (?:so )?sure (?:it|things|everything|that|this|you|they)\b"
    # pleasantries and pointers at a shared picture
    r"|^(?:check (?:out|this|it)|look at|here'?s|here is|take a look|have a look)\b(?!.*\bmy\b)"
    r"|^(?:check my|guess what|glad|happy to|so happy|thanks|thank you|good luck|congrats)\b"
    # Italian
    r"|\b(?:non vedo l'ora|ti faccio sapere|ti farò sapere|farò del mio meglio|ce la farò|non mollo|continuerò così|"
    r"mi piacerebbe|mi farebbe (?:tanto |molto )?piacere|vorrei tanto|non ci posso credere|devo (?:scappare|andare)|"
    r"ci sentiamo|a dopo|il tempo vola)\b"
    r"|^(?:sto (?:bene|benone|alla grande)|tutto bene|non (?:sono sicur[oa]|lo so))\b"
    r"|^sono (?:sicur[oa]|cert[oa]) che (?:andrà|sarà|andranno|saranno|ce la|tutto|ti|vi)\b"
    r"|^(?:guarda|ecco|dai un'occhiata)\b(?!.*\b(?:mio|mia|miei|mie)\b)"
    r"|^(?:tieni duro|non mollare|continua così|non arrenderti|forza)\b"
)
# a line about the picture just shared ("That pic was from a show I went to"): a fact only with a time anchor
_PICTURE = _rx(r"^(?:that|this|the|these|those|my) (?:pic|pics|photo|photos|picture|pictures|snap|shot)(?:'s)?\b|"
               r"^(?:questa|quella|la|queste|quelle) (?:foto|immagine|immagini)\b|^这张(?:照片|图)")
# a sentence about something named before ("It helps me show my feelings", "They're my biggest motivation", "Gives me
# a visual of my progress"): out of its context it is no fact about the user, unless a date, number or name anchors it
_PRONOUN_SUBJECT = _rx(
    r"^(?:it|they|he|she|esso|essa|loro|lui|lei)\b(?!\s+(?:is|was|'s)\s+my\s+(?:name|birthday)\b)"
    r"|^(?:this|that|these|those|questo|questa|quello|quella|questi|queste)\s+(?:is|was|has|have|had|are|were|will|"
    r"would|helps?|gives?|makes?|reminds?|keeps?|means?|è|era|ha|hanno|sono|erano|mi)\b|^(?:this|that)'s\b"
    r"|^(?:gives|helps|reminds|makes|keeps|mi aiuta|mi ricorda|mi fa|mi d[àa])\b|^(?:它|他们|她们|这|那)"
)
_I_SUBJECT = re.compile(r"\b(?:I|I'm|I've|I'd|I'll|[Ii]o|[Ss]ono|[Hh]o|[Ss]to|[Ff]accio|[Vv]ado|[Aa]mo|[Aa]doro)\b|我")
# a compliment to what the other just shared: a liking for "this"/"that" thing ("I love the colors in this painting",
# "Adoro i colori di questo quadro"); a liking in general stays a preference ("I love painting landscapes")
_SHOWN = _rx(
    r"^i (?:(?:really|just|absolutely|totally|so) )?(?:love|like|adore|dig) (?:the [\w'-]+(?: [\w'-]+)? (?:in|of|on) )?"
    r"(?:this|that|these|those)\b(?! (?:i|my|it|you|he|she|they|we|there)\b)"
    r"|^(?:adoro|amo|mi piace|mi piacciono) (?:(?:il|lo|la|i|gli|le|l') ?[\w'-]+(?: [\w'-]+)? (?:di|in|del|dello|della|"
    r"dei|degli|delle|nel|nella) )?(?:questo|questa|questi|queste|quel|quello|quella|quei|quegli|quelle)\b"
    r"|^我(?:很|真|好)?喜欢(?:这|那)"
)
_VOCATIVE = re.compile(r"^[A-Z][\w'’-]*,\s*")
_MOMENT_ZH = re.compile(r"^我?(?:很|好|真|太|非常)?(?:开心|高兴|激动|感激|期待)|迫不及待|我会加油|告诉你|"
                        r"你看|让我(?:很|好|真|太|非常)?(?:开心|高兴|激动|感动)")
# English needs a first-person *subject or possessive* (I, my): "we"/"me"/"us" alone do not make a fact of the user;
# "our" only before the couple's own events ("Our wedding anniversary is 15 August" is the user's date)
_FP_EN = re.compile(
    r"\b(?:I|I'm|I've|I'd|I'll|Im|Ive|[Mm]y|[Mm]ine|[Mm]yself|[Oo]ur(?=\s+(?:wedding|anniversary|marriage|engagement)\b))\b"
)
# the user among others ("we saw the Perseids back in 2019", "since the bank let me go"): counted as the user's only
# with a time anchor (:data:`_ANCHOR`), which makes it part of their history rather than talk of the moment
_WE_EN = _rx(r"\b(?:we|we're|we've|we'd|our|ours|us|me)\b")
# chat English drops the subject of a past event: "Got the tattoo a few years ago", "Been only to Rome once"
_ELLIPTIC_EN = _rx(r"^(?:got|went|started|began|lost|been|had|made|took|bought|finished|ran|moved|visited|tried|met|"
                   r"joined|picked up|quit|left|never (?:had|been|went|tried|liked)|"
                   r"(?:still|currently|now|also) \w+ing)\b")
# the user as the one a lasting thing acts on: "Family time matters to me", "Creativity and family keep me at peace",
# "'Brave' has a lot of significance for me" (Italian counts "mi" already: "La famiglia mi dà pace")
_EXPERIENCER_EN = _rx(
    r"\b(?:matters?|mattered|means?|meant|keeps?|kept|helps?|helped|reminds?|reminded|gives?|gave|brings?|"
    r"brought|inspires?|inspired|calms?|calmed|relaxes|relaxed|motivates?|motivated|drives?|taught|teaches|shaped)"
    r"\s+(?:(?:so |a lot |a great deal |everything |the world )?(?:to|for) )?me\b"
    r"|\b(?:significance|meaning|importance|special|important|precious|dear) (?:to|for) me\b"
)
# a time since the user's event: "It's been almost a year since DoorDash let me go" dates the user's history (its
# "me" is then the user's, as "we"/"me" are with a time anchor); "It's been a while since we talked" stays generic
_SINCE_EN = (r"(?!\s+(?:been|now)\s+(?:(?:almost|nearly|about|over|more than|less than|just|only|already)\s+)?"
             r"(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d{1,2}|a few|a couple(?: of)?|several)\s+"
             r"(?:years?|months?|weeks?|decades?)\s+since\b)")
_GENERIC_EN = _rx(rf"^(?:it'?s{_SINCE_EN}|it is{_SINCE_EN}|it was|that'?s|that is|this is|this was|let'?s|there'?s|"
                  r"there is|thanks|thank you|so glad|what a|you|your|knowing|moments like|sounds|that sounds|"
                  r"this sounds)\b"
                  # a pointer at a picture is a fact only of the user's own thing: "Here's a photo of my horse painting"
                  r"|^(?:here'?s|here is)\b(?!.*\bmy\b)")
_GENERIC_IT = _rx(r"^(?:(?:mi )?sembra|che bell[oa]|che figata|dev'essere|deve essere|è (?:così |davvero |proprio )?"
                  r"(?:bello|bellissimo|fantastico|importante)|grazie|tu|tuo|tua)\b")
# the user among others in Italian: a first-person plural verb ("andiamo", "abbiamo visto"), counted with a time anchor
_WE_IT = _rx(r"\b(?:noi|\w+iamo|siamo|abbiamo)\b")
_FP_IT = _rx(
    r"\b(?:io|mi|mio|mia|miei|mie|me|noi|nostro|nostra|nostri|nostre|ci|sono|ho|sto|vado|faccio|abito|vivo|"
    r"lavoro|studio|preferisco|amo|adoro|odio|gioco|leggo|scrivo|cucino|corro|viaggio|suono|parlo|conosco|"
    r"voglio|devo|posso|ero|avevo|andavo|frequento|insegno|guido|possiedo|colleziono|dipingo|nuoto|"
    r"pratico|seguo|tifo|festeggio|compio|chiamami|anzi)\b"
)
_SP_EN = _rx(r"\b(?:you|your|yours|you're|you've|yourself)\b")
_SP_IT = _rx(r"\b(?:tu|ti|tuo|tua|tuoi|tue|te|sei|hai|fai|vai|stai)\b")
_HEDGE = _rx(r"\b(?:forse|credo|penso|probabilmente|mi sembra|non sono sicur[oa]|maybe|perhaps|i think|probably|"
             r"i guess|not sure|kind of|sort of)\b|也许|可能")
_CORRECTION = _rx(r"\b(?:anzi|no aspetta|mi correggo|correggo|cio[eè]|actually|i mean|no wait|correction|"
                  r"scratch that)\b|其实|不对")
# the user's own name needs a direct naming phrase right before it ("ho un cane che si chiama Fido" is not); a name
# right after "sono / I'm / 我是" can only be an introduction the entities level accepted ("Ciao, sono Beatrice",
# memlab.entities.introduced_names)
_NAME_TRIGGER = _rx(r"(?:chiamami|chiamatemi|mi chiamo|mi chiamano|puoi chiamarmi|il mio nome [eè]|"
                    r"call me|my name is|my name's|i'm called|i am called|you can call me|name is|"
                    r"\bsono|\bi'm|\bi am)\s*$|(?:叫我|我叫|我的名字是|我是)\s*$")
_NEGATION = _rx(r"\b(?:non|not|never|mai|no longer|più)\b|n't\b|不|没")
_LEAD = _rx(
    r"^(?:(?:anzi|comunque|beh|be'|allora|oh|ah|eh|ok|okay|sì|si|no|well|actually|so|also|and|but|yeah|yes|"
    r"haha\w*|ahah\w*|lol|hey|hi|oh wow|wow|ma|e|poi|quindi|insomma|cmq|tra l'altro|by the way|btw|"
    r"i mean|to be honest|honestly|ps|fyi|i (?:have to|gotta|must) (?:say|admit)(?: that)?|"
    r"devo (?:dire|ammettere)(?: che)?|"
    # a frame of wonder around the user's own fact: "It's wild to think I only began transitioning this spring",
    # "Funny thing is, I didn't draw until ...", "Pensa che ho iniziato a maggio" ("Hard to believe it's been two
    # years" keeps its frame: what is left would be a generic "it's ...")
    r"(?:(?:it'?s |it is )?(?:so |kinda |pretty |just )?(?:wild|crazy|hard|funny|weird|strange|nuts|insane|"
    r"incredible|surreal) to (?:think|believe)(?: that)?|funny thing is|fun fact|believe it or not|truth is|"
    r"pensa(?:te)? che|a pensarci|strano a dirsi|incredibile ma vero|"
    # a request to remember the fact that follows: "Ricordati che sono allergico", "Keep in mind that I'm vegan"
    r"ricordati(?: bene)? che|ricorda che|tieni (?:a mente|presente) che|sappi che|per la cronaca|"
    r"(?:please )?(?:remember|keep in mind|note) that|just so you know|for the record)"
    r"(?=[\s,!.:;-]*(?:i|my|we|our|io|ho|sono|mi|il mio|la mia|ieri|oggi)\b))\b[\s,!.:;-]*)+"
)
_PREF = _rx(r"\b(?:mi piace|mi piacciono|adoro|amo|odio|detesto|preferisco|non sopporto|i (?:really )?(?:like|love|"
            r"enjoy|hate|prefer|adore)|i'm (?:a (?:big )?fan of|into)|my (?:least )?favou?rite|(?:'s|is) my fave)\b|"
            r"我喜欢|我爱")

# job titles: a small vocabulary (IT/EN) so "faccio la spesa" is not a job
_JOBS = (
    r"medic[oa]|dottor[e]|dottoressa|infermier[ea]|avvocat[oa]|ingegner[ea]|insegnante|professor[e]|professoressa|"
    r"maestr[oa]|programmator[e]|programmatrice|sviluppator[e]|sviluppatrice|architett[oa]|cuoc[oa]|chef|"
    r"commess[oa]|impiegat[oa]|operai[oa]|farmacist[a]|giornalista|fotograf[oa]|grafic[oa]|designer|"
    r"psicolog[oa]|dentista|veterinari[oa]|contabile|commercialista|ricercat(?:ore|rice)|studente(?:ssa)?|"
    r"consulente|manager|imprenditor[e]|imprenditrice|musicista|artista|scrittor[e]|scrittrice|poliziott[oa]|"
    r"pompier[e]|elettricista|idraulic[oa]|meccanic[oa]|autista|barista|camerier[ea]|parrucchier[ea]|"
    r"data scientist|"
    r"doctor|nurse|lawyer|engineer|teacher|professor|developer|programmer|software engineer|architect|cook|"
    r"cashier|accountant|journalist|photographer|psychologist|dentist|vet|veterinarian|researcher|student|"
    r"consultant|entrepreneur|musician|artist|writer|police officer|firefighter|electrician|plumber|mechanic|"
    r"driver|bartender|waiter|waitress|hairdresser|counselor|counsellor|therapist|social worker|pilot|"
    r"scientist|analyst|chef"
)
_JOB_RULES = [
    _rx(r"\blavoro come\s+(?P<v>[\w']+(?:\s[\w']+){0,2}?)(?=\s+(?:presso|da|a|in|per|alla|al|e)\b|\s*[,.;!?]|\s*$)"),
    _rx(rf"\b(?:sono|faccio)\s+(?:un|una|uno|un'|il|la|lo|l')\s*(?P<v>{_JOBS})\b"),
    _rx(rf"\bfaccio\s+(?:il|la|lo|l')\s*(?P<v>{_JOBS})\b"),
    _rx(r"\bi work as (?:an? |the )?(?P<v>[\w-]+(?:\s[\w-]+){0,2}?)(?=\s+(?:at|for|in|with|and)\b|\s*[,.;!?]|\s*$)"),
    _rx(rf"\bi(?:'m| am) (?:an? |the )(?P<v>{_JOBS})\b"),
    _rx(r"\bmy job is (?:an? )?(?P<v>[\w-]+(?:\s[\w-]+){0,2}?)(?=\s*[,.;!?]|\s*$)"),
]
# employer when the entity rules miss it ("lavoro come ingegnere presso Fincons", "I work as a nurse at St. Mary's")
_EMPLOYER = re.compile(
    r"\b(?:[Ll]avoro|[Ss]ono impiegat[oa]|I work|I'm employed|I am employed)\b[^.;!?]{0,40}?\s"
    r"(?:presso|per|alla|al|at|for)\s+(?P<v>[A-Z][\w&'.-]*(?:\s(?:[A-Z][\w&'.-]*|di|de|of|&)){0,3})"
)
_DIET = {
    "vegetarian": _rx(r"\b(?:sono|i'm|i am) (?:strictly |rigorosamente )?vegetarian[oa]?\b|\bnon mangio (?:la )?carne\b|"
                      r"\bi don'?t eat meat\b"),
    "vegan": _rx(r"\b(?:sono|i'm|i am) (?:strictly |rigorosamente )?vegan[oa]?\b"),
    "pescatarian": _rx(r"\b(?:sono|i'm|i am) (?:pescetarian[oa]|pescatarian)\b"),
    "gluten-free": _rx(r"\b(?:sono celiac[oa]|i'm celiac|i have celiac disease)\b"),
}
_MARITAL = {
    "married": _rx(r"\b(?:sono sposat[oa]|i'm married|i am married|mi sono sposat[oa])\b"),
    "single": _rx(r"\b(?:sono single|i'm single|i am single)\b"),
    "divorced": _rx(r"\b(?:sono divorziat[oa]|i'm divorced|i am divorced)\b"),
    "engaged": _rx(r"\b(?:sono fidanzat[oa]|i'm engaged|i am engaged)\b"),
    "widowed": _rx(r"\b(?:sono vedov[oa]|i'm (?:a )?widow(?:ed|er)?)\b"),
}
_FAV_WHAT = {
    "drink": "favourite_drink", "bevanda": "favourite_drink", "bibita": "favourite_drink",
    "food": "favourite_food", "cibo": "favourite_food", "piatto": "favourite_food", "dish": "favourite_food",
    "color": "favourite_color", "colour": "favourite_color", "colore": "favourite_color",
    "movie": "favourite_movie", "film": "favourite_movie",
    "book": "favourite_book", "libro": "favourite_book",
    "sport": "favourite_sport",
    "music": "favourite_music", "musica": "favourite_music", "band": "favourite_music", "genre": "favourite_music",
}
_FAV_RULES = [
    _rx(r"\b(?:il mio|la mia|lo mio)\s+(?P<what>\w+)\s+preferit[oa]\s+(?:è|e'|sono)\s+(?P<v>[^,.;!?]{1,40})"),
    _rx(r"\bmy favou?rite\s+(?P<what>\w+)\s+(?:is|are)\s+(?P<v>[^,.;!?]{1,40})"),
]
_DRINKS = _rx(r"^(?:il |la |lo |l'|un |una )?(?P<v>t[eè]|caff[eè]|cappuccino|espresso|tea|coffee|vino|wine|birra|beer|"
              r"acqua|water|succo|juice|latte|milk|cioccolata|hot chocolate)\b")
_PREFER = _rx(r"\b(?:preferisco|i prefer)\s+(?P<v>[^,.;!?]{1,40})")
_ARTICLE = _rx(r"^(?:(?:il|la|lo|i|gli|le|un|una|uno|the|a|an)\s+|l['’]\s*)")
# a conjunction followed by a new first-person clause: "Sono nato a Roma e vivo a Milano", "..., and I work at X"
_CLAUSE = re.compile(
    r"\s*(?:,|;)?\s+(?:e|ed|ma|poi|and|but|then|also)\s+(?=(?:I|I'm|I've|my|My|io|mi|ho|sono|abito|vivo|lavoro|"
    r"studio|preferisco|faccio|chiamami|mio|mia|我)\b)"
    # a spaced dash that opens a new first-person clause ("Thanks! Hope I do better - we never placed once")
    r"|\s+[-–—]\s+(?=(?:(?:in|since|for|as|but|so|and|honestly|really|still)\s+[^-–—]{0,30})?"
    r"(?:I|I'm|I've|I'd|we|we're|we've|my|our|io|ho|sono|non|abbiamo|siamo)\b)"
    # a spaced dash before a question: "I finished another pottery project - want to see a pic?" states the project
    r"|\s+(?:[-–—]|--)\s+(?=[^-–—?]*[?？]\s*$)"
)
# a parenthesis between two spaced dashes, the sentence going on with its verb after it: "Peanut - my guinea pig and my
# only pet for three years now - has been my little cheerleader". Cut at its dashes (or at its "and my"), the subject
# and what it is would be lost: such a sentence is read whole
_PARENTHETICAL = re.compile(
    r"\S\s+[-–—]\s+[^-–—]{3,100}?\s+[-–—]\s+(?:has|have|had|is|was|are|were|will|would|can|could|still|always|"
    r"never|got|gets|keeps?|kept|made|makes|helped|helps|ha|hanno|aveva|è|era|sono|erano|sarà|mi)\b", re.I)
_CJK_CHAR = re.compile(r"[\u3400-\u9fff]")
_NOT_NAMES = frozenset("i me my mine you he she it we they the a an this that here there city home town work all "
                       "everywhere nowhere somewhere something over la il lo una un".split())
_FEMININE = _rx(r"\b(?:nata|alta|sposata|stanca|contenta|vegetariana|vegana|fidanzata|divorziata|sicura)\b")


def is_moment(sentence: str) -> bool:
    """Whether a sentence only says something of the moment (a feeling, an intention for now, encouragement, a
    pleasantry): not a durable fact about the user (see ``_MOMENT``).

    Example:
        >>> is_moment("I'll let you know when I'm in Boston."), is_moment("I moved to Boston last year.")
        (True, False)
        >>> is_moment("Non vedo l'ora di vederti!"), is_moment("我很开心"), is_moment("I'm planning to adopt a dog.")
        (True, True, False)
    """
    core = _LEAD.sub("", sentence.strip()).strip()
    bare = _LEAD.sub("", _VOCATIVE.sub("", core)).strip()  # "Jon, glad I could help!" -> "glad I could help!"
    return _moment_core(core) or (bare != core and _moment_core(bare))


def _moment_core(core: str) -> bool:
    if _MOMENT.search(core) or _MOMENT_ZH.search(core) or _SHOWN.search(core):
        return True
    if _PICTURE.search(core) and not _ANCHOR.search(core):
        return True
    m = _FEELING.match(core)  # a bare feeling ("I'm so excited!"); "I'm thrilled to make a family for ..." says more
    if not m:
        return False
    rest = re.sub(r",\s+[A-Z][a-z]+\W*$", "", m.group("rest") or m.group("rest_it") or "")  # no vocative
    if _FEELING_AHEAD.match(rest):
        return True
    if _PROPER.search(rest) or re.search(r"\d", rest):  # "I was so happy when I adopted Max in 2019" tells an event
        return False
    return len(keywords(rest)) < 3


# what makes a free fact worth keeping over its neighbours in the same message (see :func:`durability`)
_ANCHOR = _rx(
    r"\b(?:ago|since|years?|months?|decades?|yesterday|today|tonight|this morning|tomorrow|(?:last|next) (?:year|month|"
    r"week|weekend|summer|winter|spring|fall|autumn|night|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun)\w*|"
    r"when i was|as a (?:kid|child|teen(?:ager)?)|at age|growing up|(?:19|20)\d\d|anni|mesi|decenni|"
    r"(?:settimane|giorni|tempo) fa|"
    r"da quando|quando ero|da piccol[oa]|ieri|oggi|stamattina|stasera|domani|l'anno scorso|il mese scorso|"
    r"la settimana scorsa|(?:il mese|la settimana|l'anno|l'estate) prossim[oa])\b|年前|以前|去年|上个月|昨天|小时候|今天|明天|下个月"
)
_HABIT = _rx(r"\b(?:always|every (?:day|week|month|year|morning|night|weekend|summer)|usually|often|each (?:day|week)|"
              r"sempre|ogni (?:giorno|settimana|mese|anno|mattina|sera|estate)|di solito|spesso)\b|总是|每天|经常")
_SUBJECT_FIRST = _rx(r"^(?:i|i'm|i've|i'd|i was|my|io|mi|mio|mia|ho|sono|abito|vivo|lavoro|我)\b|^我")
_PROPER = re.compile(r"(?<=[\w,;:\-–] )(?!I\b|I'|I’)[A-Z][\w'’-]+")
_EVALUATIVE = _rx(
    r"\b(?:is|are|was|were|'s|it's) (?:so |really |very |super |such )?(?:key|important|great|amazing|awesome|cool|"
    r"fun|hard|tough|special|neat|nice|lovely|beautiful|wonderful|inspiring|powerful|crazy|wild)\b|"
    r"\bmakes? (?:sense|me (?:feel|think|realize|happy))\b|\bi find (?:it|that|this)\b|\bfeels? like\b|"
    r"\bi (?:totally |really )?(?:agree|think|believe|feel that)\b"
    r"|\b(?:è|era|sono|erano|è stat[oa]|sono stat[ie]) (?:così |davvero |molto |proprio |super )?(?:fondamentale|"
    r"important[ei]|bellissim[oaie]|fantastic[oaie]|stupend[oaie]|divertent[ei]|difficil[ei]|dur[oaie]|special[ei]|"
    r"incredibil[ei]|pazzesc[oaie]|magnific[oaie]|potent[ei]|meraviglios[oaie]|fichissim[oaie])\b"
    r"|\b(?:ha senso|mi fa (?:sentire|pensare|capire)|lo trovo|sembra)\b"
)


# words that say nothing specific about the user: a catch-up line ("Been a busy week since we talked", "Some cool
# stuff happened", "Ultimamente è stato un periodo pieno di cose") has no content word outside them
_VAGUE = frozenset(
    "stuff things thing something anything everything lot lots week weeks day days time times lately recently busy "
    "pretty cool tough great good nice awesome amazing happened talked spoke chat chatted going been really kinda "
    "some since last wild crazy fun hard rough bit little much many having doing getting making "
    "cose cosa qualcosa tutto niente settimana settimane giorno giorni periodo periodi tempo volta ultimamente bello "
    "bella belli belle brutto brutta impegnativo impegnativa pesante tanto tante tanti molto fatto successo sentiti "
    "parlato parlati pieno piena stato stata".split()
)
_RECENT = _rx(r"\b(?:recently|lately|just|di recente|appena|ultimamente)\b")


def _about_antecedent(sentence: str) -> bool:
    """Whether a sentence's subject is a pronoun for something said before (see ``_PRONOUN_SUBJECT``) and nothing
    anchors it: no time anchor, no proper noun, no number, no clause with the user as subject ("Reminds me how much I
    love performing" keeps "I love performing")."""
    core = _LEAD.sub("", _VOCATIVE.sub("", _LEAD.sub("", sentence.strip()))).strip()
    if not _PRONOUN_SUBJECT.match(core):
        return False
    return not (_ANCHOR.search(core) or _PROPER.search(core) or re.search(r"\d", core) or _I_SUBJECT.search(core))


def _vague(sentence: str) -> bool:
    """Whether a sentence names fewer than two specific things (one is enough with a time anchor: "here's a painting I
    did recently")."""
    specific = [w for w in keywords(sentence, k=20) if w not in _VAGUE]
    anchored = _ANCHOR.search(sentence) or _RECENT.search(sentence) or ABSOLUTE_OR_FIRST.search(sentence)
    return len(specific) < (1 if anchored else 2)


#: where the user comes from: as lasting as a fact gets ("my home country", "I grew up in", "sono cresciuta a", "我老家")
_ORIGIN = re.compile(r"\b(?:my home ?(?:country|town)|my homeland|grew up in|i'm from|i am from|born and raised|"
                     r"sono cresciut[oa] a|sono nat[oa] a|vengo da|il mio paese d'origine)\b|我老家|我是在.{1,6}长大", re.I)


def durability(sentence: str) -> int:
    """How much a free first-person sentence reads like a lasting fact about the user rather than talk around
    it (the tie-break of ``max_plain_facts``): +1 for a time anchor ("five years ago", "since I was 17", "ieri",
    "2019"), +1 for the user as the sentence's subject ("I ...", "My ..."), +1 for where the user comes from ("my
    home country", "grew up in", "我老家"), +1 for a proper noun or a number inside,
    -1 for an evaluation or an opinion ("taking risks is key", "makes sense", "I find it ...").

    Example:
        >>> durability("I started playing guitar in 2018."), durability("Taking risks is key for success.")
        (3, -1)
    """
    core = _LEAD.sub("", sentence.strip()).strip()
    score = bool(_ANCHOR.search(core)) + bool(_SUBJECT_FIRST.search(core)) + bool(_ORIGIN.search(core))
    score += bool(_PROPER.search(core) or re.search(r"\d", core))
    return score - bool(_EVALUATIVE.search(core))


# a closing comment on the fact, after a dash or a comma: "I ran a charity race last Saturday - it was really rewarding",
# "Sono stata a Parigi a maggio, è stato bellissimo"; the fact is kept without it
_TAIL = re.compile(r"(?:\s+[-–—]+\s+(?:it'?s|it is|such)|(?:\s+[-–—]+\s+|,\s+)(?:it was|that was|what a|"
                   r"can'?t wait|love it|è stat[oa]|che bello|non vedo l'ora|mi è piaciut[oa]))\b[^-–—]*$", re.I)


#: a name after a comma that says which place ("my home country, Sweden", "la mia città, Bari"): not a vocative
_APPOSITION = re.compile(r"\b(?:country|city|town|state|island|region|hometown|homeland|village|paese|città|citta|"
                         r"regione|isola|paesino)\s*,\s+[A-Z][a-z]+[.!]*$", re.I)
_NOT_VOCATIVE = frozenset("also plus anyway now then still however besides well yes yeah sure okay ok oh so but and "
                          "anyways meanwhile thanks honestly inoltre comunque allora poi ora adesso però quindi "
                          "insomma grazie sì purtroppo infatti dunque intanto".split())


def _clean_sentence(s: str) -> str:
    s = _LEAD.sub("", re.sub(r"\s+", " ", s).strip())
    s = _TAIL.sub("", s) or s
    m = re.match(r"^([A-Z][a-z]+),\s+(?=\S)", s)
    if m and not (m.group(1).lower().endswith(("ly", "mente")) or _ANCHOR.search(m.group(1)) or
                  m.group(1).lower() in _NOT_VOCATIVE):
        s = s[m.end():]
    if not _APPOSITION.search(s):  # "... my home country, Sweden." names the place: no vocative to cut
        s = re.sub(r",\s+[A-Z][a-z]+([.!]*)$", r"\1", s)
    s = _LEAD.sub("", s).strip(" ,;:-")
    s = "".join(c for c in s if not (0x1F000 <= ord(c) <= 0x1FAFF or 0x2600 <= ord(c) <= 0x27BF or c in "\u200d\ufe0f"))
    s = s.strip()
    s = re.sub(r"[!]{2,}|[.]{2,}|…", ".", s)
    if s and s[0].islower():
        s = s[0].upper() + s[1:]
    return s


def _fmt_number(v: Any) -> str:
    f = float(v)
    return str(int(f)) if f.is_integer() else f"{f:g}"


def _entity_slots(sentence: str, ents: Sequence[Any], add: Callable[..., None]) -> None:
    """Slots filled by the user's own entities (names, places, employers, dates, numbers), negations skipped."""
    for e in ents:
        slot = _ATTR_SLOT.get(e.attribute or "")
        if slot is None or e.subject != "user":
            continue
        if _NEGATION.search(sentence[max(0, e.start - 30) : e.start]):
            continue
        if slot == "preferred_name" and not _NAME_TRIGGER.search(sentence[max(0, e.start - 30) : e.start]):
            continue
        if e.kind == "number":
            value = _fmt_number(e.value)
            add(slot, value, value, f"entity:{e.attribute}")
        elif e.kind == "date":
            add(slot, str(e.value), e.text, f"entity:{e.attribute}")
        else:
            v = e.text.strip()
            # a name, city or employer is a proper noun (capitalised) or CJK: "I live in the city" is no slot;
            # a message typed all in lower case ("vivo a roma") is trusted, minus generic words
            proper = v[:1].isupper() or bool(_CJK_CHAR.match(v)) or sentence[1:] == sentence[1:].lower()
            if not v or not proper or v.split()[0].casefold() in _NOT_NAMES:
                continue
            add(slot, v, v, f"entity:{e.attribute}")


def _pattern_slots(sentence: str, slang: str, keyed: list[Fact], add: Callable[..., None]) -> None:
    """Slots filled by phrase patterns: employer, job, diet, marital status, favourites, preferred drink."""
    low = sentence
    if not any(f.key == "employer" for f in keyed):
        m = _EMPLOYER.search(low)
        if m and not _NEGATION.search(low[max(0, m.start() - 12) : m.start() + 12]):
            v = m.group("v").strip(" .'")
            add("employer", v, v, "employer")
    for rx in _JOB_RULES:
        m = rx.search(low)
        if m and not _NEGATION.search(low[max(0, m.start() - 12) : m.start()]):
            v = m.group("v").strip().casefold()
            add("job_title", v, v, "job")
            break
    for value, rx in _DIET.items():
        if rx.search(low):
            add("diet", value, value if slang != "it" else _IT_DIET.get(value, value), "diet")
            break
    for value, rx in _MARITAL.items():
        m = rx.search(low)
        if m and not _NEGATION.search(low[max(0, m.start() - 8) : m.start()]):
            add("marital_status", value, value if slang != "it" else _IT_MARITAL.get(value, value), "marital")
            break
    for rx in _FAV_RULES:
        m = rx.search(low)
        if m and m.group("what").casefold() in _FAV_WHAT:
            v = _ARTICLE.sub("", m.group("v").strip()) or m.group("v").strip()
            add(_FAV_WHAT[m.group("what").casefold()], v.casefold(), v, "favourite")
            break
    m = _PREFER.search(low)
    if m:
        d = _DRINKS.match(m.group("v").strip())
        if d:
            add("favourite_drink", d.group("v").casefold(), d.group("v"), "prefer", base=0.85)


class RuleExtractor:
    """Offline pattern extractor (Italian, English, basic Chinese). See the module docstring for the rules.

    Args:
        max_chars: longest message read; longer ones are truncated (``oversize="truncate"``, logged and
            flagged in :attr:`ExtractionResult.truncated`) or rejected (``oversize="reject"``).
        oversize: ``truncate`` or ``reject``.
        min_content_words: content words a free (unkeyed) fact needs.
        free_facts: also extract free first-person facts (not only slots).
        entities: use ``memlab.entities`` for dates/numbers/names/places (the detector's code).
        max_plain_facts: most *plain* free facts kept per message (the most lasting ones: :func:`durability`); slot
            facts, counts ("I have 3 kids"), preferences and absolutes ("I've never been hurt", "la mia prima
            maratona": :data:`memlab.text.ABSOLUTE_OR_FIRST`) are always kept. A chat message usually holds one thing
            worth remembering and several sentences around it ("... it was so powerful. The support group has
            made me feel accepted."): on LoCoMo dev, 1 took precision against the session observations from 0.62
            to 0.78 at recall 0.71 -> 0.64 (``memlab eval extraction --split dev``). ``None``: no cap.

    Example:
        >>> r = RuleExtractor().extract("Ciao! Chiamami Zhang San. Abito a Roma.")
        >>> [(f.key, f.value) for f in r.facts]
        [('preferred_name', 'Zhang San'), ('home_city', 'Roma')]
    """

    name = "rules"

    def __init__(
        self,
        *,
        max_chars: int = MAX_MESSAGE_CHARS,
        oversize: str = "truncate",
        min_content_words: int = 3,
        free_facts: bool = True,
        entities: bool = True,
        max_plain_facts: int | None = 1,
    ) -> None:
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
            raise InvalidInputError(
                f"The 'max_chars' parameter of RuleExtractor must be an int in [1, inf). Got {max_chars!r} instead.")
        if oversize not in ("truncate", "reject"):
            raise InvalidInputError(
                f"The 'oversize' parameter of RuleExtractor must be 'truncate' or 'reject'. Got {oversize!r} instead.")
        if isinstance(min_content_words, bool) or not isinstance(min_content_words, int) or min_content_words < 0:
            raise InvalidInputError(
                "The 'min_content_words' parameter of RuleExtractor must be an int in [0, inf). "
                f"Got {min_content_words!r} instead.")
        if max_plain_facts is not None and (isinstance(max_plain_facts, bool) or not isinstance(max_plain_facts, int)
                                            or max_plain_facts < 0):
            raise InvalidInputError(
                f"The 'max_plain_facts' parameter of RuleExtractor must be an int in [0, inf) or None. "
                f"Got {max_plain_facts!r} instead.")
        self.max_plain_facts = max_plain_facts
        self.max_chars = max_chars
        self.oversize = oversize
        self.min_content_words = min_content_words
        self.free_facts = free_facts
        self.entities = entities

    def get_params(self) -> dict[str, Any]:
        """JSON-able description (recorded in eval runs)."""
        return {"name": self.name, "max_chars": self.max_chars, "oversize": self.oversize,
                "min_content_words": self.min_content_words, "free_facts": self.free_facts,
                "entities": self.entities, "max_plain_facts": self.max_plain_facts}

    # ------------------------------------------------------------------------------------------
    def prepare(self, message: Any) -> tuple[str, bool]:
        """Clean a message and apply the size limit. Returns ``(text, truncated)``.

        Raises:
            InvalidInputError: not a str, or too long with ``oversize="reject"``.
        """
        if not isinstance(message, str):
            raise InvalidInputError(
                f"The 'message' parameter of {type(self).__name__}.extract must be a str. "
                f"Got {type(message).__name__} instead.")
        text = strip_control(message).strip()
        if len(text) <= self.max_chars:
            return text, False
        if self.oversize == "reject":
            raise InvalidInputError(
                f"The 'message' parameter of {type(self).__name__}.extract must be at most {self.max_chars} "
                f"characters. Got {len(text)} instead.")
        log.warning("message of %d characters truncated to %d", len(text), self.max_chars)
        return text[: self.max_chars], True

    def extract(self, message: str, *, lang: str | None = None, ref_time: datetime | None = None,
                topic: str | None = None, known: Sequence[str] = ()) -> ExtractionResult:
        """Extract facts, tone and a fatigue signal from one user message.

        Args:
            message: the user's message (any language; control characters are removed).
            lang: ``it``/``en``/``zh`` for templates; ``None`` guesses per sentence.
            ref_time: resolves relative dates ("ieri", "last Friday"); ``None`` leaves them unresolved.
            topic: topic label attached to every fact.

        Returns:
            An :class:`ExtractionResult` (empty facts for an empty or emoji-only message).

        Raises:
            InvalidInputError: ``message`` is not a str, or too long with ``oversize="reject"``.
        """
        text, truncated = self.prepare(message)
        sig = measure(text)
        facts: list[Fact] = []
        seen: set[tuple[str | None, str]] = set()
        clauses = _join_elliptic([c for s0 in split_sentences(text) for s in statements(s0)
                                  for c in ([s] if _PARENTHETICAL.search(s) else _CLAUSE.split(s)) if c and c.strip()])
        for sentence in clauses:
            for f in self._sentence_facts(sentence, lang=lang, ref_time=ref_time, topic=topic):
                k = (f.key, (f.value or f.content).casefold())
                if k not in seen:
                    seen.add(k)
                    facts.append(f)
        return ExtractionResult(
            facts=tuple(self._cap_plain(facts)), tone=sig.tone, fatigue_signal=sig.fatigue, lang=lang or sig.lang,
            n_chars=sig.n_chars, n_words=sig.n_words, has_emoji=sig.has_emoji, truncated=truncated,
            extractor=self.name, signals=dict(sig.components),
        )

    def _cap_plain(self, facts: list[Fact]) -> list[Fact]:
        """At most ``max_plain_facts`` plain free facts (the most confident first — a fact holding a date, place or
        number of the user is — then the most lasting (:func:`durability`), then the most content words; order
        kept). Absolutes are not capped (:data:`memlab.text.ABSOLUTE_OR_FIRST`)."""
        plain = [i for i, f in enumerate(facts) if f.key is None and f.rule != "count" and f.type != "preference"
                 and not ABSOLUTE_OR_FIRST.search(f.evidence or f.content)]
        if self.max_plain_facts is None or len(plain) <= self.max_plain_facts:
            return facts
        ranked = sorted(plain, key=lambda i: (-facts[i].confidence, -durability(facts[i].evidence or facts[i].content),
                                              -len(keywords(facts[i].content)), i))
        drop = set(ranked[self.max_plain_facts:])
        return [f for i, f in enumerate(facts) if i not in drop]

    # ------------------------------------------------------------------------------------------
    def _skip(self, s: str) -> bool:
        if len(s) > MAX_SENTENCE_CHARS or not any(c.isalpha() for c in s):
            return True
        if is_question(s) or _QUESTION_START.match(s):
            return True
        core = _LEAD.sub("", s).strip()
        return bool(_CONDITIONAL.match(core) or _REACTION.match(s) or _COUNTERFACTUAL.search(core) or not core)

    def _sentence_facts(self, sentence: str, *, lang: str | None, ref_time: datetime | None,
                        topic: str | None) -> list[Fact]:
        if self._skip(sentence):
            return []
        slang = lang or detect_lang(sentence)
        hedged = bool(_HEDGE.search(sentence))
        corrected = bool(_CORRECTION.search(sentence))
        feminine = bool(_FEMININE.search(sentence))
        kws = keywords(sentence)
        keyed: list[Fact] = []
        ents: Sequence[Any] = ()
        if self.entities:
            from memlab.entities import extract_entities

            ents = extract_entities(sentence, lang=slang if slang in ("it", "en", "zh") else None, ref_time=ref_time)

        def add(key: str, value: str, shown: str, rule: str, base: float = 0.9) -> None:
            conf = 0.95 if corrected else base
            if hedged:
                conf -= 0.2
            text = render_slot(key, shown, lang=slang, feminine=feminine)
            extra = tuple(w for w in keywords(shown) if w not in kws)
            keyed.append(Fact(content=text, confidence=round(min(1.0, max(0.0, conf)), 3), key=key, value=value,
                              type=_slot_type(key), keywords=(kws + extra)[:6], topic=topic, evidence=sentence,
                              rule=rule, correction=corrected))

        _entity_slots(sentence, ents, add)
        _pattern_slots(sentence, slang, keyed, add)
        if keyed or not self.free_facts:
            return keyed
        return self._free_fact(sentence, slang, hedged, kws, ents, topic)

    def _min_words(self, sentence: str) -> int:
        """Content words a free fact needs: one fewer with a name or a number, one fewer with a time anchor, a habit or
        an absolute about that name ("I've been to Paris yesterday", "I've always loved horses", "Non sono mai stato in
        America"); never fewer than one."""
        core = _LEAD.sub("", sentence.strip())
        named = bool(_PROPER.search(core) or re.search(r"\d", core))
        anchored = bool(_ANCHOR.search(core) or _HABIT.search(core) or (named and ABSOLUTE_OR_FIRST.search(core)))
        return max(1, self.min_content_words - anchored - named)

    def _free_fact(self, sentence: str, slang: str, hedged: bool, kws: tuple[str, ...], ents: Sequence[Any],
                   topic: str | None) -> list[Fact]:
        if _SOCIAL.search(sentence) or is_moment(sentence):
            return []
        fp, sp = _persons(sentence, slang)
        if fp == 0 or sp >= fp:
            return []
        n_content = len(kws) if slang != "zh" else word_count(sentence) // 2
        # an entity about the user ("I have 3 kids", "ho 2 gatti") is content enough
        counted = any(e.subject == "user" and e.attribute == "count" for e in ents)
        if n_content < (1 if any(e.subject == "user" for e in ents) else self._min_words(sentence)):
            return []
        if not ents and slang != "zh" and _vague(sentence):
            return []
        pref = bool(_PREF.search(sentence))
        if _about_antecedent(sentence) or (durability(sentence) < 0 and not pref):  # an opinion, nothing lasting
            return []
        content = _clean_sentence(sentence)
        if not content or word_count(content) < 3:
            return []
        other = [e for e in ents if e.subject != "user"]
        ftype = "preference" if pref else ("relation" if other else "fact")
        conf = (0.8 if counted else 0.6 + (0.1 if ents else 0.0)) - (0.15 if hedged else 0.0)
        extra = tuple(str(e.value) for e in ents if isinstance(e.value, str) and str(e.value) not in kws)
        return [Fact(content=content, confidence=round(conf, 3), type=ftype, keywords=(kws + extra)[:6], topic=topic,
                     evidence=sentence, rule="count" if counted else "first-person")]


def _join_elliptic(clauses: list[str]) -> list[str]:
    """A clause that drops its subject ("Started when I was young") read with the statement before it, whose subject
    and object it continues: "I play clarinet! Started when I was young" is kept whole (alone, the second half says
    nothing of what was started). Only after a first-person statement that is no question."""
    out = list(clauses)
    for i in range(1, len(out)):
        core = _LEAD.sub("", clauses[i]).strip()
        prev = clauses[i - 1].strip()
        if (_ELLIPTIC_EN.match(core) and _FP_EN.search(prev)
                and not is_question(prev) and len(prev) + len(core) < MAX_SENTENCE_CHARS):
            out[i] = f"{prev} {core}"
    return out


def _persons(sentence: str, slang: str) -> tuple[int, int]:
    """How often a sentence speaks of the user (first person) and of the other speaker (second person); ``(0, 0)``
    for a generic remark ("It's so important", "Sounds fun", "Che bello")."""
    core = _LEAD.sub("", sentence)
    if slang == "zh":
        return sentence.count("我"), sentence.count("你")
    if slang != "en":
        if _GENERIC_IT.match(core):
            return 0, 0
        fp = len(_FP_IT.findall(core))
        if fp == 0 and _WE_IT.search(core) and _ANCHOR.search(core):  # "Il mese prossimo andiamo in Giappone"
            fp = 1
        return fp, len(_SP_IT.findall(core))
    if _GENERIC_EN.match(core):
        return 0, 0
    fp, sp = len(_FP_EN.findall(core)), len(_SP_EN.findall(core))
    if fp == 0 and _ANCHOR.search(sentence):  # "we"/"our"/"me" with a time anchor: the user's own history
        fp = len(_WE_EN.findall(sentence))
    if fp == 0 and _ELLIPTIC_EN.match(core):  # "Got the tattoo a few years ago"
        fp = 1
    if fp == 0 and _EXPERIENCER_EN.search(core):  # "Family time matters to me", "Dancing keeps me going"
        fp = 1
    return fp, sp


_IT_DIET = {"vegetarian": "vegetariana", "vegan": "vegana", "pescatarian": "pescetariana", "gluten-free": "senza glutine"}
_IT_MARITAL = {"married": "sposato/a", "single": "single", "divorced": "divorziato/a", "engaged": "fidanzato/a",
               "widowed": "vedovo/a"}


def _slot_type(key: str) -> str:
    from memlab.extraction.slots import SLOTS

    spec = SLOTS.get(key)
    return spec.type if spec else "fact"
