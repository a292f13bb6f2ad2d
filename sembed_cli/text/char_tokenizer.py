"""A character-level tokenizer that saves and loads as an ordinary Hugging Face tokenizer.

The POI paper (Zhang et al., "BERT has a Mouth, and it can Taste", section 3)
lower-cases names, standardises umlauts and removes spaces before a character
BERT reads them. Here that is the tokenizer's own normaliser (NFD, accents
stripped, lower case) and pre-tokeniser (whitespace dropped, then one token a
character), so every user of the saved model (`AutoTokenizer.from_pretrained`,
`SentenceTransformer`, `sembed taste`) reads names the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def _pipeline():
    from tokenizers import Regex, normalizers, pre_tokenizers

    normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents(), normalizers.Lowercase()])
    pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(),
                                             pre_tokenizers.Split(Regex("."), behavior="isolated")])
    return normalizer, pre_tokenizer


def characters(text: str) -> list[str]:
    """The characters of `text` the way the tokenizer sees them (normalised, no whitespace)."""
    normalizer, pre_tokenizer = _pipeline()
    return [piece for piece, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))]


def build(texts: Iterable[str], min_count: int = 1, max_length: int = 64):
    """A PreTrainedTokenizerFast whose vocabulary is the special tokens and every character seen `min_count` times."""
    from tokenizers import Tokenizer, models, processors
    from transformers import PreTrainedTokenizerFast

    normalizer, pre_tokenizer = _pipeline()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(piece for piece, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)))
    alphabet = sorted(c for c, n in counts.items() if n >= min_count)
    vocab = {token: i for i, token in enumerate([*SPECIAL_TOKENS, *alphabet])}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]",
                                   model_max_length=max_length)
