"""Metrics behind `sembed eval`: plain functions over arrays, importable without typer.

`fields` reads and checks what one record contributes (a vector, a gold score,
a label) and raises `BadRecord`, so the record source can name FILE:LINE;
`sts`, `entailment` and `classify` compute the metrics from the kept arrays.
"""
