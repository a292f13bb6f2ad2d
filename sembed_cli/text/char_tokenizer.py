"""The POI paper's character-level tokenizer, and a word-piece one learnt from the same names; both save and load as
ordinary Hugging Face tokenizers.

The POI paper (Zhang et al., "BERT has a Mouth, and it can Taste", section 3)
lower-cases names, standardises umlauts and removes spaces before a character
BERT reads them. Here that is the tokenizer's own normaliser (NFD, accents
stripped, lower case) and pre-tokeniser (whitespace dropped, then one token a
character), so every user of the saved model (`AutoTokenizer.from_pretrained`,
`SentenceTransformer`, `sembed taste`) reads names the same way.

`build_wordpiece`: a WordPiece vocabulary (`tokenizers`' trainer) learnt from the training POI names,
with the same normaliser. The paper's Chinese names had thousands of characters, so its taste ranked the true one
among thousands; English has about 40 letters, nearly every one a top-10 guess. Pieces of names ("ville",
"burg", "san") are again thousands, and an English word splits into pieces a model of names does not expect.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _pipeline():
    from tokenizers import Regex, normalizers, pre_tokenizers

    normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex("."), behavior="isolated")]
    )
    return normalizer, pre_tokenizer


def characters(text: str) -> list[str]:
    """The characters of `text` the way the tokenizer sees them (normalised, no whitespace)."""
    normalizer, pre_tokenizer = _pipeline()
    return [piece for piece, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]


def _fast_tokenizer(tokenizer, max_length: int):
    """The `tokenizers` object as a transformers tokenizer, [CLS] ... [SEP] around each text."""
    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    vocab = tokenizer.get_vocab()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=max_length,
    )


def build_wordpiece(texts: Iterable[str], vocab_size: int, max_length: int = 64):
    """A PreTrainedTokenizerFast with a WordPiece vocabulary of at most `vocab_size` learnt from `texts` (words split
    at blanks and punctuation, the character tokenizer's normaliser; the special tokens first, as `build`'s)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    normalizer, _ = _pipeline()
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS), show_progress=False)
    tokenizer.train_from_iterator(texts, trainer)
    return _fast_tokenizer(tokenizer, max_length)


def build(texts: Iterable[str], min_count: int = 1, max_length: int = 64):
    """A PreTrainedTokenizerFast whose vocabulary is the special tokens and every character seen `min_count` times."""
    from tokenizers import Tokenizer, models

    normalizer, pre_tokenizer = _pipeline()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(piece for piece, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    alphabet = sorted(c for c, n in counts.items() if n >= min_count)
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *alphabet])}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    return _fast_tokenizer(tokenizer, max_length)


def for_names(vocab: str, names: list[str], vocab_size: int, max_length: int) -> tuple[object, str]:
    """Stage 1's tokenizer of `names` by `vocab` ("characters", the paper's, or "wordpiece", at most `vocab_size`
    pieces), and the line that describes it in the model's sembed.json."""
    if vocab == "characters":
        return build(names, max_length=max_length), "characters (NFD, accents stripped, lower case, no blanks)"
    return (
        build_wordpiece(names, vocab_size, max_length=max_length),
        f"wordpiece, at most {vocab_size} learnt from the names (NFD, accents stripped, lower case)",
    )
