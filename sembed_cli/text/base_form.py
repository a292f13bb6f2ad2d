"""Base-form conversion of TA-SBERT (paper 001, section III-A and Fig. 1(c)).

Contractions are expanded and apostrophes removed before a sentence reaches a
subword tokenizer, so that "won't" becomes "will not" instead of the token
"won" (the past of "win", or Korean money). As the paper does, spaCy decides:
its tokenizer splits the clitics off ("wo" + "n't") and gives their norms
("will", "not"); its tagger tells the "'s" of "he's tall" (VBZ) from the
possessive of "John's car" (POS) and the "'d" of "she'd go" (MD) from that of
"she'd gone". Where a tag leaves the choice open (is/has, would/had) the next
word decides, by the rules in `_is_or_has` and `_would_or_had`.

Only tokens that carry an apostrophe (and the "wo", "ca", "sha", "ai" before
a "n't") change; every other character of the text, spacing and curly quotes
included, is copied from the input, so a text without an apostrophe comes back
exactly as it went in (and skips spaCy altogether).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..io import TextFields, derived_key, map_texts
from .spacy_pipeline import BATCH

# Curly right and left single quotes and the modifier-letter apostrophe all serve as apostrophes in real text.
APOSTROPHES = "\u2019\u2018\u02bc"
_STRAIGHTEN = str.maketrans(dict.fromkeys(APOSTROPHES, "'"))
_ANY_APOSTROPHE = re.compile(f"['{APOSTROPHES}]")
_WORD = re.compile(r"\S+")

# Clitics whose expansion does not depend on context (spaCy leaves "'ve" after a modal un-normed).
CLITICS = {"n't": "not", "'m": "am", "'re": "are", "'ve": "have", "'ll": "will"}
# Verbs that the tokenizer leaves cut short before "n't" ("won't" -> "wo" + "n't").
NEGATED_HOSTS = {"wo": "will", "ca": "can", "sha": "shall"}
# Participles that after "'s" mean "has" whatever follows: "he's gone", "it's been", "she's got".
HAS_PARTICIPLES = frozenset({"been", "gone", "got", "gotten", "had", "come", "become"})
# Tags that open an object: "she's finished it" (has) against the passive "it's finished" (is).
OBJECT_TAGS = frozenset({"DT", "PDT", "PRP", "PRP$", "CD", "NN", "NNS"})
# Words before "'s" that cannot own anything, so "'s" is a verb whatever its tag: "where's he?".
PRONOUN_TAGS = frozenset({"PRP", "WP", "WRB", "EX"})
# Words tagged IN that open a clause, after which "it's" is "it is": "if it's water".
SUBORDINATORS = frozenset(
    {
        "after",
        "although",
        "as",
        "because",
        "before",
        "if",
        "once",
        "since",
        "so",
        "than",
        "that",
        "though",
        "till",
        "unless",
        "until",
        "whether",
        "while",
    }
)
# Tags that cannot open the noun phrase of a possessor ("John's [car]"), only the complement of "is".
AFTER_VERB_TAGS = frozenset({"DT", "IN", "PRP", "PRP$", "TO", "EX"})
ADVERB_TAGS = frozenset({"RB", "RBR", "RBS"})
PLURAL_SUBJECTS = frozenset({"you", "we", "they"})


@dataclass(frozen=True)
class Rewrite:
    """What a token becomes. `spaced`: an expanded word, kept apart from a word it was glued to."""

    text: str
    spaced: bool = True


DROP = Rewrite("", spaced=False)


def has_apostrophe(text: str) -> bool:
    return _ANY_APOSTROPHE.search(text) is not None


def analysis_text(text: str) -> str:
    """The text spaCy sees: same length, straight apostrophes, and shouted contractions lower-cased.

    spaCy's tokenizer exceptions know "I'm" and "Won't" but not "I'M" or "WON'T",
    and its tagger reads "JOHN'S" as a proper noun; lower-casing those words (or a
    text with no lower-case letter at all) lets both work. Character offsets stay
    those of the original, which the output is copied from.
    """
    text = text.translate(_STRAIGHTEN)
    if not any(c.islower() for c in text):
        lowered = text.lower()
        return lowered if len(lowered) == len(text) else text

    def lower_shouted(match: re.Match) -> str:
        word = match.group()
        lowered = word.lower()
        return lowered if "'" in word and word.isupper() and len(lowered) == len(word) else word

    return _WORD.sub(lower_shouted, text)


def base_form(doc, original: str) -> str:
    """The base form of `original`, given `doc` = the tagged `analysis_text(original)`."""
    out: list[str] = []
    last_spaced = False
    for token in doc:
        source = original[token.idx : token.idx + len(token)]
        rewrite = _rewrite(token)
        text = source if rewrite is None else _cased(rewrite.text, source, _group_is_upper(token, original))
        spaced = rewrite is not None and rewrite.spaced
        if text:
            # "wo"+"n't" -> "will not": an expansion glued to a word gets a space of its own.
            if (spaced or last_spaced) and out and out[-1][-1:].isalnum() and text[0].isalnum():
                out.append(" ")
            out.append(text)
            last_spaced = spaced
        if token.whitespace_:
            out.append(token.whitespace_)
            last_spaced = False
    return "".join(out)


def base_forms(texts: Sequence[str], nlp, batch_size: int = BATCH) -> Iterator[str]:
    """`base_form` of each text, in order; texts without an apostrophe are returned as they are."""
    docs = nlp.pipe((analysis_text(text) for text in texts if has_apostrophe(text)), batch_size=batch_size)
    for text in texts:
        yield base_form(next(docs), text) if has_apostrophe(text) else text


def normalize_records(
    records: Iterable[dict], nlp, fields: TextFields = TextFields(), batch_size: int = 1000
) -> Iterator[dict]:
    """`sembed normalize`: replace every text field by its base form; the original goes to `text_raw` (suffixed
    like the field).

    A `text_raw` already there is kept, so normalizing twice still leaves the
    original text in it.
    """

    def store(record: dict, key: str, normalized: str) -> None:
        record.setdefault(derived_key(key, "text_raw"), record[key])
        record[key] = normalized

    return map_texts(records, fields, batch_size, lambda texts: base_forms(texts, nlp), store)


def _rewrite(token) -> Rewrite | None:
    """How one token changes, or None to copy it unchanged."""
    lower = token.lower_
    if "'" not in lower:
        nxt = _attached_next(token)
        if nxt is not None and nxt.lower_ == "n't":
            return _negated_host(token)
        return None
    if lower == "'s":
        return _apostrophe_s(token)
    if lower == "'d":
        return Rewrite(_would_or_had(token))
    if lower == "'":
        # The plural possessive "the dogs' bowl"; a lone quotation mark stays.
        return DROP if token.tag_ == "POS" and _attached_previous(token) is not None else None
    if lower in CLITICS:
        return Rewrite(CLITICS[lower])
    norm = token.norm_
    if "'" not in norm and any(c.isalpha() for c in norm) and any(c.isalpha() for c in lower):
        return Rewrite(norm)  # spaCy's own expansions: "goin'" -> "going", "'em" -> "them", "y'" -> "you"
    return None  # part of a name or word (O'Brien, o'clock, rock 'n' roll), or a quotation mark


def _negated_host(token) -> Rewrite | None:
    """The verb before "n't" where spaCy cut it short: "wo" -> "will", "ca" -> "can", "ai" -> am/is/are/have/has."""
    if token.lower_ == "ai":
        return Rewrite(_aint(token))
    full = NEGATED_HOSTS.get(token.lower_)
    return Rewrite(full) if full else None  # not spaCy's norm: it gives "do" for the "did" of "didn't"


def _aint(token) -> str:
    """ "ain't": "have"/"has" before a participle ("ain't got"), else the form of "be" the subject takes."""
    previous = _word_before(token)
    subject = previous.lower_ if previous is not None else ""
    plural = subject in PLURAL_SUBJECTS or (previous is not None and previous.tag_ in ("NNS", "NNPS"))
    negation = _attached_next(token)
    following = _word_after(negation) if negation is not None else None
    if following is not None and following.tag_ in ("VBN", "VBD"):
        return "have" if plural or subject == "i" else "has"
    return "am" if subject == "i" else "are" if plural else "is"


def _apostrophe_s(token) -> Rewrite:
    """ "'s": "us" after "let", a plural after digits, "is"/"has" after a pronoun or as a verb, else possessive."""
    previous = _attached_previous(token)
    host = previous.lower_ if previous is not None else ""
    if host == "let":
        return Rewrite("us")
    if host.isdigit():
        return Rewrite("s", spaced=False)  # "the 90's" -> "the 90s"
    if host == "it" and _misspelt_its(token, previous):
        return Rewrite("s", spaced=False)  # "in it's mouth" -> "in its mouth"
    pronoun = previous is not None and (previous.tag_ in PRONOUN_TAGS or host in ("that", "this"))
    if token.tag_ == "POS":
        verb = pronoun or _verb_follows(token)  # "where's he?", "the man's in the car"
    else:
        verb = pronoun or token.tag_.startswith("VB")
    return Rewrite(_is_or_has(token)) if verb else DROP


def _misspelt_its(token, it) -> bool:
    """ "it's" after a preposition and before a noun is the possessive "its": "with a ball in it's mouth"."""
    before = _word_before(it)
    following = _next_token(token)
    return (
        before is not None
        and before.tag_ == "IN"
        and before.lower_ not in SUBORDINATORS
        and following is not None
        and following.tag_ in ("NN", "NNS", "JJ")
    )


def _verb_follows(token) -> bool:
    """Whether what follows an "'s" the tagger called possessive can only follow a verb: "the man's in the car"."""
    following = _next_token(token)
    return following is not None and (following.tag_ in AFTER_VERB_TAGS or following.lower_ in ("not", "never"))


def _is_or_has(token) -> str:
    """ "'s" as a verb: "has" before a perfect participle, "is" otherwise (adjectives, -ing, passives)."""
    following = _word_after(token)
    if following is None or following.tag_ not in ("VBN", "VBD"):
        return "is"
    if following.lower_ in HAS_PARTICIPLES:
        return "has"
    after = _word_after(following, skip=("RP",))
    return "has" if after is not None and after.tag_ in OBJECT_TAGS else "is"


def _would_or_had(token) -> str:
    """ "'d": "had" before a participle or in "'d better", "would" before a bare verb or "'d rather"."""
    following = _word_after(token, keep=("better", "best", "rather", "sooner"))
    if following is not None:
        if following.lower_ in ("better", "best"):
            return "had"
        if following.lower_ in ("rather", "sooner") or following.tag_ == "VB" or following.lower_ == "'ve":
            return "would"
        if following.tag_ in ("VBN", "VBD"):
            return "had"
    return "had" if token.tag_ == "VBD" else "would"


def _word_after(token, skip: Sequence[str] = (), keep: Sequence[str] = ()):
    """The next token that is not an adverb (or a tag in `skip`), unless it is one of the words `keep`."""
    doc = token.doc
    for i in range(token.i + 1, len(doc)):
        candidate = doc[i]
        if candidate.is_space:
            continue
        if candidate.lower_ in keep or (candidate.tag_ not in ADVERB_TAGS and candidate.tag_ not in skip):
            return candidate
    return None


def _word_before(token):
    doc = token.doc
    for i in range(token.i - 1, -1, -1):
        if not doc[i].is_space:
            return doc[i]
    return None


def _attached_previous(token):
    """The token right before this one with no space between them, if any."""
    if token.i == 0:
        return None
    previous = token.doc[token.i - 1]
    return previous if not previous.whitespace_ and not previous.is_space else None


def _next_token(token):
    doc = token.doc
    return next((doc[i] for i in range(token.i + 1, len(doc)) if not doc[i].is_space), None)


def _attached_next(token):
    if token.whitespace_ or token.i + 1 >= len(token.doc):
        return None
    return token.doc[token.i + 1]


def _group_is_upper(token, original: str) -> bool:
    """Whether the whitespace-delimited word holding the token is written in capitals ("WON'T", "I'M")."""
    start = token.idx
    while start > 0 and not original[start - 1].isspace():
        start -= 1
    end = token.idx
    while end < len(original) and not original[end].isspace():
        end += 1
    letters = [c for c in original[start:end] if c.isalpha()]
    return len(letters) > 1 and all(c.isupper() for c in letters)


def _cased(word: str, source: str, shouted: bool) -> str:
    """`word` in the case of what it replaces: "WON'T" -> "WILL NOT", "Won't" -> "Will not", "won't" -> "will not"."""
    if shouted:
        return word.upper()
    first = next((c for c in source if c.isalpha()), "")
    return word[:1].upper() + word[1:] if first.isupper() else word
