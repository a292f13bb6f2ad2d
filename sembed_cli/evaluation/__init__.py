"""The tasks behind `sembed eval`: plain functions, importable without typer.

One module per task (`sts`, `entailment`, `classify`, `salience`, `poi`,
`structure`), each with an `evaluate` function that reads the records and
returns the report dict the command writes, and a `print_report` that shows it
as a table on stderr (as spaCy's `evaluate()` keeps the scores apart from
their printing); the metrics themselves are functions over the kept arrays.
`statistics` holds the correlations, their intervals and the paired bootstrap
that several tasks share; `pair_similarity` and `cf_sweep` read what one STS
pair keeps, `sts_tables` shows the STS report. `records.read_all` reads a
whole stream, keeping what each record contributes; `io.fields` and
`io.vector_fields` read and check one record's vector, gold score, label or
group and raise `BadRecord`, so the record source can name FILE:LINE;
`tables` formats the numbers of every table.
"""
