"""Training, one module per method, importable without typer.

Settings flow one way: `methods/` declares each method's frozen `Settings`
and its `run(job, settings)` hands them, with the `Job` (`job.py`), to the
method's trainer, which reads them through a `typing.Protocol` of its own and
imports nothing from `methods/`.

- `methods`: the registry of `sembed train --method`: each method's recipe,
  settings (its options, with their defaults) and `run`, without torch.
- `job`: the `Job` and `Recipe` both sides share.

The trainer of method X is `X.py`, as its registry entry is `methods/X.py`:
`sbert` (sbert, and cf: CF-BERT is SBERT with component focusing, W_cf = 0
being SBERT), `ta` (TA-SBERT), `nws`, `poi` (POI stage 2), `syntax`,
`static` (with its parts `static_teacher` and `static_fit`). mlm has two:
`mlm_adaptation` (an encoder adapted into a masked-LM; the name stays, as the
sembed.json of the models it wrote names its `held_out` function) and
`mlm_from_scratch` (--from-scratch: the POI paper's character BERT, stage 1).

What the trainers share, written once:
- `data`: reading a training input (the records, the warning about skipped
  ones, the refusal of an empty input, the provenance in sembed.json).
- `schedule`: the one optimisation `Schedule` (AdamW, linear warm-up and decay).
- `sentence_loop`: the loop of sbert, cf and ta, on the sentence-transformers
  trainer (progress on stderr, checkpoints, --resume, seed, device), so
  `torchrun`/`accelerate` work; `scored_pairs`: their pairs with a gold score.
- `epoch_loop`: the epoch loop of the plain torch trainers and its checkpoints;
  `masked_lm_loop`: the masked-LM steps on it and the model directory of mlm
  and poi. Loading a masked-LM is `models/masked_lm.py`.
- `checkpoints`: where checkpoints live, the one policy that keeps them, and
  how a run is resumed.
- `model_card`: the README.md of every trained model directory.
"""
