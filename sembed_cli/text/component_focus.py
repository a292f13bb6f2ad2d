"""S_cf, the component-enhanced sentence part of CF-BERT (section 3.3, Tables 1-3).

CF-BERT embeds each sentence twice: the whole text (S_basic) and S_cf, the
words of its subject, predicate and object, plus negation words, "arranged
according to the dependency relations of the subject, predicate, and object".
The paper parsed with the Stanford parser; here the input is a spaCy parse in
the `tokens` shape of `sembed parse` ({i, text, lemma, pos, tag, dep, head}),
whose English labels differ from Stanford's in a few places. The rules, each
sentence (dependency tree) on its own:

- Subject: every token whose relation contains "subj" (nsubj, nsubjpass,
  csubj, csubjpass). In an expletive clause ("There is a dog") the `attr` is
  the subject, as Stanford labels it nsubj; the expletive itself is not.
- Object: every token whose relation contains "obj" (dobj, obj, iobj), and
  spaCy's `dative` (Stanford's iobj: "gave her a book") unless it is a
  preposition ("gave a book to her"). A `pobj` counts when its preposition
  hangs on a verb or on a predicate ("He sat on the chair", "afraid of
  dogs"), not when it sits inside a noun phrase: in Table 1 "in a crowd"
  modifies "woman" and is left out (the paper's parser labelled it
  amod/case). The preposition, being the head of the obj relation, stays in
  front of its object ("He sat on chair", "ball kicked by boy"), which keeps
  the direction of a passive.
- Predicate: the heads of the subjects and objects; for a pobj, the word its
  preposition hangs on; never an auxiliary (a subject spaCy hangs on the
  "Is" of "Is the cat sleeping?" belongs to "sleeping"). A predicate's
  complement (`acomp`, `attr`: "looks tired", "is a doctor") joins it, and a
  copula "be" with a complement gives way to it, as in Stanford's copula
  analysis ("She is happy" -> "She happy"), just as auxiliaries are dropped
  ("is not carrying" -> "not carrying"). A verb coordinated with a predicate
  is a predicate too.
- Coordination: conjuncts of a subject or object share its role
  ("John and Mary bought a car and a house" -> "John Mary bought car house").
- Negation: not, no, n't and never are always kept; n't is written "not"
  (the sub-word tokenizer downstream has no "n't"). Each belongs to the
  nearest word above it in the tree that S_cf keeps and stays on its side of
  it ("no money", "apples, not oranges" -> "apples not"). One on a clause's
  predicate keeps its place around the subjects and predicate: "woman not
  carrying bag", "No, you do not need" -> "No you not need", "He said no".
  One with no kept word above it goes first.
- Order: one group per predicate: subjects, predicate, objects, each part in
  sentence order; a clausal subject's group stands in its place ("To err is
  human" -> "err human"); other groups go in the order of their first word,
  sentences in text order. A token is written at most once; two tokens of the
  same spelling are both written ("A dog chases another dog" -> "dog chases
  dog").
- Fallback (paper: when a sentence has no subj and no obj relation): its
  nouns (NN*), verbs (VB*) and negation words, in sentence order.
- S_cf is never empty: when nothing above applies it is the original text.

Table 1: "An Asian woman in a crowd is not carrying a black bag" ->
"woman not carrying bag"; "A man attacks a woman" -> "man attacks woman".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..io import TextFields, batched, derived_key, text_jobs
from . import spacy_pipeline
from .dependency import parse_missing

Token = Mapping[str, object]
S_CF = "s_cf"  # the field, suffixed like its text's (s_cf_a for text_a)

NEGATIONS = frozenset({"not", "no", "n't", "n’t", "never"})
CONTRACTED_NOT = frozenset({"n't", "n’t"})
COMPLEMENTS = frozenset({"acomp", "attr"})
AUXILIARIES = frozenset({"aux", "auxpass"})
EXPLETIVE = "expl"
BE_FORMS = frozenset({"be", "is", "are", "was", "were", "am", "been", "being", "'s", "'re", "'m", "’s", "’re", "’m"})


def s_cf(tokens: Sequence[Token], text: str) -> str:
    """S_cf for one text from its parse; the text itself when the parse yields no word."""
    return " ".join(component_words(tokens)) or text


def spo_records(
    records: Iterable[dict],
    nlp=None,
    fields: TextFields = TextFields(),
    batch_size: int = 1000,
    model: str = spacy_pipeline.DEFAULT_MODEL,
) -> Iterator[dict]:
    """`sembed spo`: add `s_cf` (suffixed like the text field) to every record.

    A text's parse is its `tokens` field (`tokens_a` for `text_a`...) when the
    record has one; otherwise the text is parsed with `nlp`, or, when that is
    None, with the spaCy pipeline `model`, loaded only once a text needs it.
    """
    for batch in batched(records, batch_size):
        write_s_cf(text_jobs(batch, fields), nlp, model)
        yield from batch


def add_missing_s_cf(jobs: Sequence[tuple[dict, str]], nlp=None, model: str = spacy_pipeline.DEFAULT_MODEL) -> int:
    """S_cf, as `spo_records` builds it, for each (record, text key) of `jobs` whose record lacks it; an S_cf
    the record has is kept. Returns how many were built."""
    missing = [(record, key) for record, key in jobs if derived_key(key, S_CF) not in record]
    write_s_cf(missing, nlp, model)
    return len(missing)


def write_s_cf(jobs: Sequence[tuple[dict, str]], nlp=None, model: str = spacy_pipeline.DEFAULT_MODEL) -> None:
    """Store S_cf of each (record, text key), from the record's tokens field where it has one, else parsing the
    text (`dependency.parse_missing`: spo adds no tokens field)."""
    parses = parse_missing(
        [record.get(derived_key(key, "tokens")) for record, key in jobs],
        [record[key] for record, key in jobs],
        nlp,
        model,
    )
    for (record, key), tokens in zip(jobs, parses):
        record[derived_key(key, S_CF)] = s_cf(tokens, record[key])


def component_words(tokens: Sequence[Token]) -> list[str]:
    """The S_cf words of a parse, sentence by sentence (empty when nothing qualifies)."""
    tree = Tree(tokens)
    order: dict[int, None] = {}  # an ordered set: a malformed parse must not write a token twice either
    for sentence in tree.sentences():
        order.update(dict.fromkeys(clause_order(tree, sentence) or fallback_order(tree, sentence)))
    return [tree.surface(i) for i in order]


class Tree:
    """A dependency parse indexed by token position, tolerant of odd heads."""

    def __init__(self, tokens: Sequence[Token]):
        self.tokens: dict[int, Token] = {int(t["i"]): t for t in tokens}  # type: ignore[call-overload]
        self.children: dict[int, list[int]] = {i: [] for i in self.tokens}
        for i in sorted(self.tokens):
            head = self.head(i)
            if head is not None:
                self.children[head].append(i)

    def head(self, i: int) -> int | None:
        """The head of token i, or None for a root (or a head outside the parse)."""
        head = self.tokens[i].get("head")
        return head if isinstance(head, int) and head != i and head in self.tokens else None

    def ancestors(self, i: int) -> Iterable[int]:
        """Heads above i, nearest first; stops on a cycle a malformed parse might have."""
        seen = {i}
        head = self.head(i)
        while head is not None and head not in seen:
            yield head
            seen.add(head)
            head = self.head(head)

    def root(self, i: int) -> int:
        root = i
        for ancestor in self.ancestors(i):
            root = ancestor
        return root

    def sentences(self) -> list[list[int]]:
        """Token positions grouped by the tree they belong to, in text order."""
        groups: dict[int, list[int]] = {}
        for i in sorted(self.tokens):
            groups.setdefault(self.root(i), []).append(i)
        return sorted(groups.values(), key=lambda group: group[0])

    def dep(self, i: int) -> str:
        return str(self.tokens[i].get("dep") or "").lower()

    def tag(self, i: int) -> str:
        return str(self.tokens[i].get("tag") or "")

    def text(self, i: int) -> str:
        return str(self.tokens[i].get("text") or "")

    def is_verb(self, i: int) -> bool:
        return self.tag(i).startswith("VB") or self.tokens[i].get("pos") in ("VERB", "AUX")

    def is_preposition(self, i: int) -> bool:
        return self.tokens[i].get("pos") == "ADP" or self.tag(i) == "IN"

    def is_negation(self, i: int) -> bool:
        return self.text(i).lower() in NEGATIONS

    def is_copula(self, i: int) -> bool:
        lemma = str(self.tokens[i].get("lemma") or "").lower()
        return lemma == "be" or (not lemma and self.text(i).lower() in BE_FORMS)

    def surface(self, i: int) -> str:
        """The word as S_cf writes it: n't becomes "not", everything else as in the text."""
        text = self.text(i)
        return "not" if text.lower() in CONTRACTED_NOT else text

    def conjuncts(self, i: int) -> list[int]:
        """i and every token coordinated with it below it (a car and a house and a boat)."""
        found, todo = [i], [i]
        while todo:
            for child in self.children[todo.pop()]:
                if self.dep(child) == "conj" and child not in found:
                    found.append(child)
                    todo.append(child)
        return found


@dataclass
class Clause:
    """One predicate's group: what S_cf writes for it, before ordering."""

    key: int  # the syntactic head the subjects and objects hang on
    subjects: set[int] = field(default_factory=set)
    predicate: list[int] = field(default_factory=list)
    objects: set[int] = field(default_factory=set)
    prepositions: dict[int, int] = field(default_factory=dict)  # pobj -> its preposition
    negations: dict[int, int | None] = field(default_factory=dict)  # negation -> kept word it sits by, None: predicate

    def words(self) -> set[int]:
        return {*self.subjects, *self.predicate, *self.objects, *self.prepositions.values()}


def clause_order(tree: Tree, sentence: list[int]) -> list[int]:
    """Token positions of S_cf in subject-predicate-object order; empty without subj/obj."""
    clauses: dict[int, Clause] = {}

    def clause(key: int) -> Clause:
        return clauses.setdefault(key, Clause(key))

    for i in sentence:
        head, dep = tree.head(i), tree.dep(i)
        if head is None:
            continue
        if tree.dep(head) in AUXILIARIES and (verb := tree.head(head)) is not None:
            head = verb  # "Is the cat sleeping?" with the subject on "Is": the verb is the predicate
        if "subj" in dep or (dep == "attr" and any(tree.dep(c) == EXPLETIVE for c in tree.children[head])):
            clause(head).subjects.update(tree.conjuncts(i))
        elif ("obj" in dep and dep != "pobj") or (dep == "dative" and not tree.is_preposition(i)):
            clause(head).objects.update(tree.conjuncts(i))
    for i in sentence:
        if tree.dep(i) == "pobj":
            key = prepositional_predicate(tree, i, clauses)
            if key is not None:
                for obj in tree.conjuncts(i):
                    clause(key).objects.add(obj)
                    clause(key).prepositions[obj] = tree.head(i)  # type: ignore[assignment]
    if not clauses:
        return []
    add_coordinated_verbs(tree, clauses)
    taken = set().union(*(c.subjects for c in clauses.values()))
    for c in clauses.values():
        c.predicate = predicate_words(tree, c.key, taken)
    leading = place_negations(tree, sentence, clauses)
    return leading + arrange(clauses)


def prepositional_predicate(tree: Tree, pobj: int, clauses: Mapping[int, Clause]) -> int | None:
    """The clause a prepositional object belongs to: its preposition's verb or predicate, else None."""
    preposition = tree.head(pobj)
    attached = tree.head(preposition) if preposition is not None else None
    if attached is None:
        return None
    if attached in clauses or tree.is_verb(attached):
        return attached
    above = tree.head(attached)
    if above is None or tree.dep(attached) not in COMPLEMENTS or not (above in clauses or tree.is_verb(above)):
        return None
    if any(attached in c.subjects for c in clauses.values()):
        return None  # the subject of "There is a dog in the yard", not a complement
    return above  # "She is afraid of dogs": the complement is the predicate


def add_coordinated_verbs(tree: Tree, clauses: dict[int, Clause]) -> None:
    """A verb coordinated with a predicate shares its subject: "A man sings and dances"."""
    todo = list(clauses)
    while todo:
        for child in tree.children[todo.pop()]:
            if tree.dep(child) == "conj" and tree.is_verb(child) and child not in clauses:
                clauses[child] = Clause(child)
                todo.append(child)


def predicate_words(tree: Tree, key: int, subjects: set[int]) -> list[int]:
    """The predicate of a clause: its head plus complements; a copula gives way to its complement."""
    complements = [
        c
        for c in tree.children[key]
        if tree.dep(c) in COMPLEMENTS and c not in subjects and not tree.tag(c).startswith("W")
    ]
    if complements and tree.is_copula(key):
        return complements
    return [key, *complements]


def place_negations(tree: Tree, sentence: list[int], clauses: dict[int, Clause]) -> list[int]:
    """Give each negation word to the clause of the nearest kept word above it; returns those with none."""
    owner = {i: c for c in clauses.values() for i in c.words()}
    leading = []
    for i in sentence:
        if i in owner or not tree.is_negation(i):
            continue
        for above in tree.ancestors(i):
            if above in clauses:  # on the predicate's head (also a copula that gave way): clause negation
                clauses[above].negations[i] = None
                break
            if above in owner:
                owner[above].negations[i] = above
                break
        else:
            leading.append(i)
    return leading


def arrange(clauses: Mapping[int, Clause]) -> list[int]:
    """Each clause as subjects, negation, predicate, objects; a clausal subject inside its place.

    Clauses that are not inside another go in the order of their first word;
    a token already written is not written again.
    """
    inside = {i for c in clauses.values() for i in (*c.subjects, *c.objects) if i in clauses and i != c.key}
    outer = [c for c in clauses.values() if c.key not in inside]
    order: dict[int, None] = {}  # an ordered set: a token goes where it first comes
    for group in sorted((clause_words(c, clauses, {c.key}) for c in [*outer, *clauses.values()]), key=min):
        order.update(dict.fromkeys(group))
    return list(order)


def clause_words(c: Clause, clauses: Mapping[int, Clause], open_keys: set[int]) -> list[int]:
    """One clause's tokens: subjects, predicate, objects, each negation on its side of its anchor."""
    before: dict[int | None, list[int]] = {}
    after: dict[int, list[int]] = {}
    for negation, anchor in c.negations.items():
        if anchor is not None and negation > anchor:  # "apples, not oranges"
            after.setdefault(anchor, []).append(negation)
        else:
            before.setdefault(anchor, []).append(negation)

    def word(i: int) -> list[int]:
        if i in clauses and i not in open_keys:  # "To err is human", "Eating vegetables is healthy"
            return clause_words(clauses[i], clauses, open_keys | {i})
        return [*before.get(i, []), i, *after.get(i, [])]

    # the clause's own negation keeps its place around the subjects and predicate:
    # "No, you do not need" -> "No you not need", "is not carrying" -> "not carrying", "said no"
    first_subject, predicate = min(c.subjects, default=c.predicate[0]), c.predicate[0]
    leading: list[int] = []
    middle: list[int] = []
    trailing: list[int] = []
    for n in before.get(None, []):
        (leading if n < first_subject else middle if n < predicate else trailing).append(n)
    words = leading
    for s in sorted(c.subjects):
        words += word(s)
    words += middle
    for p in c.predicate:
        words += word(p)
    for o in sorted(c.objects):
        if o in c.prepositions:
            words += word(c.prepositions[o])
        words += word(o)
    return words + trailing


def fallback_order(tree: Tree, sentence: list[int]) -> list[int]:
    """Paper section 3.3: without subj/obj, nouns and verbs (and negation words) in sentence order."""
    return [i for i in sentence if tree.tag(i).startswith(("NN", "VB")) or tree.is_negation(i)]
