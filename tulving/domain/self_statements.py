"""What a person says about themselves, restated about them, without an LLM.

"By the way, I've been collecting vintage cameras for three months now." becomes "user has
been collecting vintage cameras for three months now." (a FACT about ``user``), "I'm really
into indie rock" becomes a PREFERENCE. Why: people state durable facts about themselves in
passing, inside long messages about something else, and a cold-start briefing can only
show what extraction kept as a short statement about the person; the turn itself is too
long to show and says too much else.

Which clauses qualify: a declarative clause (the sentence does not ask) whose subject is
"I" (at the start of the sentence after discourse markers such as "by the way", or after a
comma, a dash or a coordinating "and"/"but"/"so"/"because"/"as"/"since"), followed by a
verb that states something about the speaker: being (``I'm a nurse``, ``I'm allergic to``),
having (``I have a cat``, ``I've got three bikes``), doing over time (``I've been
collecting``, ``I usually get home at 6:30``), having done (``I tried``, ``I've completed
4 projects``), liking (``I love``, ``I'm into``). Hedges, wishes, requests and thoughts
about the conversation (``I think``, ``I'd like``, ``I need``, ``I'm looking for``,
``I'm not sure``, ``I was wondering``) are not statements about the speaker's life, nor
are clauses that point back at the conversation (``you``, ``your``). A relative clause
(``which I completed last month``) is taken only with the possession it qualifies: "my
latest certification in Data Science, which I completed last month" says "user completed
their latest certification in Data Science last month" even inside a request
(``relative_statements``).

The restatement replaces the first-person subject by the subject's name with the verb put
in the third person (``I usually get`` -> ``user usually gets``; past tenses stay), and
the other first-person words by ``they``/``their``/``them``.
"""

from __future__ import annotations

import re

import attrs

#: Longest restated clause kept, in words (a longer one is cut at a clause boundary).
MAX_WORDS = 32
MIN_WORDS = 3
_MARKER = re.compile(
    r"^(?:(?:by the way|btw|also|actually|oh|and|but|so|well|anyway|incidentally|plus|"
    r"honestly|yeah|yes|no|ok|okay|now|in fact|fun fact|oh and|and also|as for me|"
    r"personally|for what it's worth|haha|lol|wow|hey|hi|great|thanks|thank you)"
    r"\s*[,:!\-\u2013\u2014]?\s+)+",
    re.IGNORECASE,
)
#: Where a clause may start inside a sentence: after these, "I" begins a new clause.
_CLAUSE_START = re.compile(
    r"(?:^|[,;:]\s+|\s[-\u2013\u2014]\s+|\s(?:and|but|so|because|as|since|plus)\s+)"
    r"(?=I(?:'m|'ve|'d|'ll|\s)\s*)"
)
_ADVERBS = frozenset("""just recently finally already also actually really still now currently
usually always often normally typically regularly generally sometimes even definitely totally
absolutely personally originally mostly mainly only never particularly especially truly
occasionally frequently rarely seriously officially""".split())
_LIKING = frozenset({"love", "like", "enjoy", "prefer", "adore", "hate", "dislike", "detest",
                     "loved", "liked", "enjoyed", "preferred", "hated", "disliked"})
#: "I'm <word>": words that say what the speaker is (a state, not a mood).
_BEING = frozenset("""a an from based originally married engaged divorced single retired
pregnant allergic vegetarian vegan pescatarian intolerant left-handed right-handed part
member fan into interested passionate fond obsessed big huge avid self-employed
unemployed studying learning training working living volunteering taking teaching raising
saving renting building running writing reading collecting majoring enrolled registered
trained certified licensed""".split())
_PREFERENCE_BEING = frozenset({"fan", "into", "interested", "passionate", "fond", "obsessed",
                               "big", "huge", "avid"})
#: Verbs (and verb forms) whose clause is about a thought, a wish, a request or the
#: conversation, not the speaker's life.
_NOT_ABOUT_ME = frozenset("""think feel guess hope want need wonder believe suppose agree
disagree understand see know appreciate mean wish bet doubt imagine assume realize realise
notice thought felt guessed hoped wanted needed wondered believed supposed agreed understood
saw knew appreciated meant wished assumed realized realised noticed heard hear would could
should might must can can't cannot couldn't wouldn't shouldn't will shall may 'll 'd
say said ask asked tell told promise apologize apologise figure figured forgot forget
mention mentioned recall care mind am was were do did does don't didn't doesn't haven't
hadn't wasn't isn't aren't weren't won't""".split())
_ING_NOT_ABOUT_ME = frozenset("""thinking looking trying wondering planning hoping going
considering asking waiting curious sure glad happy excited sorry afraid worried nervous
confused ready here there not just about leaning getting feeling having struggling
debating torn open willing able unable kind meaning""".split())
_HAVE_NOT_ABOUT_ME = re.compile(
    r"^(?:to|no|any|a (?:question|quick question|few questions|feeling|hard time|lot of "
    r"questions|couple of questions|doubt|concern)|some (?:questions|concerns|doubts)|"
    r"questions?|been (?:thinking|wondering|meaning|looking|considering|hoping|asking|"
    r"waiting|planning|trying to)|heard|noticed|realized|decided|wondered|thought|got it|"
    r"got to|got a question)\b",
    re.IGNORECASE,
)
_WAS_ABOUT_ME = frozenset({"born", "diagnosed", "raised", "promoted", "hired", "married",
                           "a", "an", "adopted", "elected", "accepted", "admitted",
                           "awarded", "named", "injured", "laid"})
#: An object that is something the conversation offered ("I like the first caption idea",
#: "I'm interested in the part about boundaries"): a reaction, not a lasting preference.
REACTION = re.compile(
    r"^(?:the|that|this|these|those|your)\b.*\b(?:idea|ideas|suggestions?|options?|approach|"
    r"tips?|list|answer|response|recommendations?|part|parts|caption|examples?|one|ones|"
    r"first|second|third|last|version|sound of|way)\b",
    re.IGNORECASE,
)
_CONDITION = re.compile(r"\b(?:as long|as soon|as much|as far|as well|as if|even if|if|"
                        r"unless|whether)\s+(?:as\s+)?$", re.IGNORECASE)
#: A short clause that hinges on "it", "them", "those" ("I've been putting it off", "I've
#: seen some of those") and names nothing specific says nothing once the conversation
#: around it is gone.
_PRONOUN_OBJECT = re.compile(r"\b(?:it|them|those|these)\b", re.IGNORECASE)
_PRONOUN_MIN_WORDS = 12
_TIME_PHRASE = re.compile(r"\b(?:these|those) days\b", re.IGNORECASE)
#: "I'm interested in learning more about X": a request in the form of a statement.
_ASKS_TO_LEARN = re.compile(r"\binterested in (?:learning|knowing|hearing|reading|finding "
                            r"out|getting) (?:more|some|a bit)\b", re.IGNORECASE)
#: "I'm a bit ...", "I'm kind of ...": a mood, not what the speaker is.
_HEDGED = frozenset({"bit", "little", "lot", "tad", "kind", "sort"})
_POINTS_AT_TALK = frozenset({"it", "that", "this", "what", "why", "how", "the", "to", "back"})
_POINTS_BACK = re.compile(r"\b(?:you|your|yours|yourself)\b", re.IGNORECASE)
_IRREGULAR_PAST = frozenset("""went got bought made took ran read saw met found sold built
wrote drove rode swam began brought caught taught thought sent spent lost won left kept
paid held grew knew flew fell felt gave came became did had was were ate drank sang sat
stood told understood broke chose forgot hung put set cut hit quit shut spread upset
""".split())
_THIRD_PERSON = {"have": "has", "do": "does", "go": "goes", "am": "is", "be": "is",
                 "don't": "doesn't"}
_CUT = re.compile(r",? but\b|;|\s[-\u2013\u2014]\s(?=I\b)|, (?:so|which means|because)\b",
                  re.IGNORECASE)
#: Where a clause that already says something (``_ONE_THING_WORDS`` words) is cut so that a
#: statement holds one thing: what follows a comma and "and", "which", "where",
#: "especially" or "including" is another statement, or a detail the budget can spare.
_SECOND_THING = re.compile(r", (?:and|which|where|especially|including|while)\b", re.IGNORECASE)
_ONE_THING_WORDS = 6


@attrs.frozen
class SelfStatement:
    """A clause a speaker said about themselves, restated about ``subject``; ``specific``
    counts what it names (numbers, proper names, titles): see :func:`specificity`."""

    content: str
    preference: bool
    specific: int = 0


_NUMBER_WORDS = frozenset("""one two three four five six seven eight nine ten eleven twelve
twenty thirty forty fifty hundred thousand dozen half first second third""".split())


def specificity(clause: str) -> int:
    """How many specific things a clause names: numbers and number words, capitalised
    words other than the first and "I" (names of people, places, brands, titles).

    Why it matters: "I have a stash of 17 skeins" and "I use Adobe Premiere Pro" say
    something a later conversation can use; "I've been doing some research online" says
    little. Extraction gives the specific a little more importance.
    """
    words = re.findall(r"[\w'$:.,-]+", clause)
    count = 0
    for i, word in enumerate(words):
        bare = word.strip(".,:'")
        if not bare:
            continue
        number = any(ch.isdigit() for ch in bare) or bare.lower() in _NUMBER_WORDS
        name = i > 0 and bare[0].isupper() and bare not in ("I", "I'm", "I've", "I'd", "I'll")
        if number or name:
            count += 1
    return count


def self_statements(sentence: str, subject: str) -> list[SelfStatement]:
    """The statements about the speaker in ``sentence`` (see the module doc)."""
    text = sentence.strip()
    if not text or text.endswith("?") or "?" in text:
        return []
    text = _MARKER.sub("", text)
    out: list[SelfStatement] = []
    taken = 0  # a clause inside one already taken is not restated again
    for start in _clause_starts(text):
        if start < taken:
            continue
        clause = _clause(text[start:])
        if clause is None:
            continue
        kind = _kind(clause)
        if kind is None:
            continue
        restated = _restate(clause, subject)
        if restated is not None and not _reaction(clause):
            out.append(SelfStatement(restated, kind == "preference", specificity(clause)))
            taken = start + len(clause)
    said = {s.content for s in out}
    return out + [r for r in relative_statements(text, subject) if r.content not in said]


_RELATIVE = re.compile(
    r"\b(?:my|our) (?P<np>(?:[\w'-]+ ){0,6}?[\w'-]+),? (?:which|that) I"
    r"(?P<adv>(?: (?:just|recently|finally|already|also|actually|really|first))*) "
    r"(?P<verb>[a-z]+ed|got|bought|made|took|read|saw|met|found|sold|built|wrote|won|began|"
    r"love|like|enjoy|adore|use|own)\b(?P<rest>[^,.;:!?]*)")


#: A phrase that is not one possession ("my university informing me that I made ...",
#: "my coupon on the 3rd, which I used", "my book appraised, which I acquired"), and a
#: clause whose object is elsewhere ("that I spilled coffee on", "which I got promoted to").
_RELATIVE_MISREAD = re.compile(r"\b(?:me|I|you|\w+ing|on the)\b|\w+ed$")
_STRANDED = re.compile(
    r"\b(?:on|in|at|to|for|with|from|of|about|into)$|^\s+(?!(?:today|yesterday|online|"
    r"recently|together|home|there|here|again|once|twice)\b)\w+\s+(?:on|in|at|to|for|with|"
    r"from|of|about|into)\b")


def relative_statements(sentence: str, subject: str) -> list[SelfStatement]:
    """"my X, which I <did or like> ..." restated about ``subject`` (see the module doc)."""
    out: list[SelfStatement] = []
    for match in _RELATIVE.finditer(sentence):
        np, verb, rest = match.group("np"), match.group("verb"), match.group("rest").rstrip()
        phrase = f"{np} {verb}{rest}"
        if _POINTS_BACK.search(phrase) or len(phrase.split()) < MIN_WORDS + 1:
            continue
        if rest and _PRONOUN_OBJECT.match(rest.strip()):
            continue  # "which I love it for": the object is elsewhere
        if _RELATIVE_MISREAD.search(np) or _STRANDED.search(rest) or (
                verb == "got" and re.match(r"\s+\w+ed\b", rest)):
            continue  # not the possession's own clause (see _RELATIVE_MISREAD)
        liking = verb in _LIKING
        past = verb.endswith("ed") or verb in _IRREGULAR_PAST
        conjugated = verb if past else _third_person(verb)
        text = f"{subject}{match.group('adv')} {conjugated} their {np}{rest}"
        for pattern, replacement in _OTHER_FIRST_PERSON:
            text = pattern.sub(replacement, text)
        content = re.sub(r"\s+", " ", text).rstrip(" ,;:-") + "."
        out.append(SelfStatement(content, liking, specificity(phrase)))
    return out


def _clause_starts(text: str) -> list[int]:
    """Where clauses with "I" as subject start; not after "as long as", "as if", "even
    if" (a condition, not a statement)."""
    return sorted({m.end() for m in _CLAUSE_START.finditer(text)
                   if not _CONDITION.search(text[: m.end()])})


def _clause(text: str) -> str | None:
    """The clause from its "I" to its end, cut at a boundary when it runs long."""
    clause = text.strip().rstrip(".!;:,").strip()
    cut = _CUT.search(clause, 4)
    if cut is not None:
        clause = clause[: cut.start()].rstrip(" ,")
    for second in _SECOND_THING.finditer(clause):
        head = clause[: second.start()]
        quoted = (head.count('"') + head.count("\u201c") + head.count("\u201d")) % 2 == 1
        if len(head.split()) >= _ONE_THING_WORDS and not quoted:
            clause = clause[: second.start()]
            break
    words = clause.split()
    if len(words) > MAX_WORDS:
        head = " ".join(words[:MAX_WORDS])
        boundary = max(head.rfind(", "), head.rfind(" - "), head.rfind(" and "))
        if boundary < len(" ".join(words[:8])):
            return None  # no clause boundary early enough: a run-on, not a statement
        clause = head[:boundary]
    words = clause.split()
    if len(words) < MIN_WORDS or _POINTS_BACK.search(clause):
        return None
    if (len(words) < _PRONOUN_MIN_WORDS
            and _PRONOUN_OBJECT.search(_TIME_PHRASE.sub("", clause))
            and not specificity(clause)):
        return None
    if _ASKS_TO_LEARN.search(clause):
        return None
    return clause


def _reaction(clause: str) -> bool:
    """Whether the clause's object is something the conversation offered."""
    match = re.match(r"I(?:'m| am)?(?:\s+[a-z]+ly)?\s+(?:[a-z]+ed|[a-z]+)\s+(?:in\s+|about\s+|"
                     r"of\s+|with\s+)?(.*)", clause)
    return match is not None and REACTION.match(match.group(1)) is not None


def _words_after_i(clause: str) -> tuple[str, list[str]]:
    """(the contraction after "I" if any, the following words lower-cased, adverbs
    skipped)."""
    match = re.match(r"I('m|'ve|'d|'ll)?\b\s*(.*)", clause)
    if match is None:
        return "", []
    words = [w.strip(",.;:!\"'()").lower() for w in match.group(2).split()]
    while words and words[0] in _ADVERBS:
        words.pop(0)
    return match.group(1) or "", words


def _kind(clause: str) -> str | None:
    """"fact", "preference" or None (not a statement about the speaker)."""
    contraction, words = _words_after_i(clause)
    if not words:
        return None
    head = words[0]
    if contraction in ("'d", "'ll"):
        return None
    if contraction == "'m" or head == "am":
        rest = words if contraction == "'m" else words[1:]
        rest = [w for w in rest if w not in _ADVERBS]
        if not rest or rest[0] in _ING_NOT_ABOUT_ME:
            return None
        if rest[0] in _PREFERENCE_BEING or (rest[0] in ("a", "an") and len(rest) > 1
                                             and rest[1] in ("fan", "big", "huge")):
            return "preference"
        if rest[0] in ("a", "an") and len(rest) > 1 and rest[1] in _HEDGED:
            return None
        if rest[0] in _BEING or rest[0].endswith("ing"):
            return "fact"
        return None
    if contraction == "'ve" or head in ("have", "has", "had"):
        after = words if contraction == "'ve" else words[1:]
        joined = " ".join(after)
        if not after or _HAVE_NOT_ABOUT_ME.match(joined):
            return None
        if after[0] == "been":
            return None if [*after, ""][1] in _ING_NOT_ABOUT_ME else "fact"
        return "fact"
    if head in ("was",):
        return "fact" if len(words) > 1 and words[1] in _WAS_ABOUT_ME else None
    if head in ("get", "got") and (len(words) < 2 or words[1] in _POINTS_AT_TALK):
        return None  # "I get it", "I got what you meant"
    if head in ("don't", "never"):
        if len(words) < 2 or words[1] in _NOT_ABOUT_ME or words[1] in _LIKING:
            return None
        return "fact"
    if head in _LIKING:
        obj = words[1:]
        # "I love the city's music scene" is a preference; "I like to"/"I love that" are
        # not: only an object that names something is kept
        if not obj or obj[0] in ("to", "that", "this", "it", "how", "what"):
            return None
        return "preference"
    if head in _NOT_ABOUT_ME or head.endswith("n't"):
        return None
    if head == "used" and len(words) > 1 and words[1] == "to":
        return "fact"
    if head.endswith("ed") or head in _IRREGULAR_PAST:
        return "fact"
    if head == "remember" and len(words) < _REMEMBERED_MIN_WORDS:
        return None  # "I remember now", "I remember that race": nothing to keep
    if _present_verb(head):
        return "fact"
    return None


#: Words after "I remember" for a memory worth keeping ("I remember buying a silver
#: necklace for my sister's birthday on 15th February").
_REMEMBERED_MIN_WORDS = 5


#: Present-tense verbs that state a habit or a state when "I" says them.
_HABITS = frozenset("""work live own use play drive run cook bake read listen watch volunteer
teach study practice attend go visit collect grow keep speak commute take follow eat drink
wear ride swim hike write paint knit train coach manage lead rent share walk jog cycle sing
dance travel shop spend make meditate get journal garden fish sew crochet draw code program
prefer love like enjoy hate dislike adore support celebrate host belong subscribe remember
""".split())


def _present_verb(word: str) -> bool:
    return word in _HABITS


def _third_person(verb: str) -> str:
    if verb in _THIRD_PERSON:
        return _THIRD_PERSON[verb]
    if re.search(r"(s|sh|ch|x|z|o)$", verb):
        return verb + "es"
    if re.search(r"[^aeiou]y$", verb):
        return verb[:-1] + "ies"
    return verb + "s"


_OTHER_FIRST_PERSON = [
    (re.compile(r"\bI'm\b"), "they're"), (re.compile(r"\bI am\b"), "they are"),
    (re.compile(r"\bI was\b"), "they were"), (re.compile(r"\bI've\b"), "they've"),
    (re.compile(r"\bI'd\b"), "they'd"), (re.compile(r"\bI'll\b"), "they'll"),
    (re.compile(r"\bI\b"), "they"), (re.compile(r"\bmyself\b", re.I), "themselves"),
    (re.compile(r"\bmine\b", re.I), "theirs"), (re.compile(r"\bmy\b", re.I), "their"),
    (re.compile(r"\bme\b"), "them"),
]


def _restate(clause: str, subject: str) -> str | None:
    """``clause`` (starting with "I") with ``subject`` as its subject, in the third person."""
    match = re.match(r"I(?:'m|\s+am)\b", clause)
    if match:
        head = f"{subject} is"
        rest = clause[match.end():]
    elif (match := re.match(r"I(?:'ve|\s+have)\b", clause)) is not None:
        head, rest = f"{subject} has", clause[match.end():]
    else:
        match = re.match(r"I((?:\s+[A-Za-z]+ly|\s+(?:just|still|also|now|never|even|often|"
                         r"always|only|mostly|mainly|already|sometimes|usually|normally))*)"
                         r"\s+([A-Za-z']+)", clause)
        if match is None:
            return None
        verb = match.group(2)
        lowered = verb.lower()
        past = lowered.endswith("ed") or lowered in _IRREGULAR_PAST or lowered == "didn't"
        conjugated = verb if past or lowered == "never" else _third_person(lowered)
        head = f"{subject}{match.group(1)} {conjugated}"
        rest = clause[match.end():]
    for pattern, replacement in _OTHER_FIRST_PERSON:
        rest = pattern.sub(replacement, rest)
    text = f"{head}{rest}".strip()
    text = re.sub(r"\s+", " ", text)
    return text.rstrip(" ,;:-") + "."
