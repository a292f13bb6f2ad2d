"""Training, one module per method, importable without typer.

Settings flow one way: `methods/` declares each method's frozen `Settings`
and its `run(job, settings)` hands them, with the `Job` (`job.py`), to the
method's trainer, which reads them through a `typing.Protocol` of its own and
imports nothing from `methods/`.

- `methods`: the registry of `sembed train --method`: each method's recipe,
  settings (its options, with their defaults) and `run`, without torch.
- `job`: the `Job` and `Recipe` both sides share.
- `scored_pairs`: reading and checking pairs with a gold score (sbert, cf, ta).
- `siamese`: SBERT and CF-BERT fine-tuning, with the CF-BERT loss; `ta_sbert`: TA-SBERT.
- `sentence_trainer`: fine-tuning a sentence-transformers model under
  sembed's rules (progress on stderr, checkpoints, --resume, seed, device),
  on the sentence-transformers trainer, so `torchrun`/`accelerate` work.
- `masked_lm_loop`: the plain torch loop and model directory of masked-LM
  training; `char_bert`: the POI paper's character BERT (stage 1);
  `poi_triplet`: its stage 2; `mlm_adaptation`: an encoder adapted into a
  masked-LM. Loading a masked-LM is `models/masked_lm.py`.
- `word_saliency` (nws), `syntax`, `static_distillation` (static).
- `model_card`: the README.md of every trained model directory.
- `checkpoints`: where checkpoints live and how a run is resumed.
"""
