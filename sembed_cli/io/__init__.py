"""The record stream and its parts: JSONL in, JSONL out, with exact error locations.

One module a job; the names the rest of sembed uses are importable from here (`from ..io import RecordSource`):

    lines          reading an input line by line: stdin or a file, gzip by its magic bytes, the encoding, a BOM
                   (STDIN, display_name, ReadPosition, LineDecoder, AUTO_ENCODING, text_lines)
    rejects        the bad-input policy of one input: stop at FILE:LINE, or count and go on (Rejects)
    json_codec     JSON values exactly: integers past 64 bits digit for digit (loads, loads_many, dumps, json_type)
    atomic_files   files written whole or not at all, durable on request (atomic_path, write_bytes_atomic,
                   write_json_atomic, commit, temporary_sibling, sync_file, sync_directory)
    stream         the two ends of a command and the options that make them (RecordSource, RecordSink, Shard,
                   StreamOptions, run_stream)
    lookalike_formats  what a first line of another format is, for the error's hint (embed_first_hint)
    batches        records in batches for a model, a partial batch before an input error (batched, text_jobs,
                   map_texts)
    fields         a record's text, number, label and group fields, checked (TextFields, check_text, check_number,
                   counted_keys, derived_key, label, group)
    vector_fields  a record's vectors, checked (vector, float32_vector, Dimension, nonzero, unit_scaled,
                   SAFE_MAGNITUDES)
    vector_json    the JSON text of a window's vectors, written by worker processes (VectorJson, rows_json)

The rules of the stream live in these modules and only there (README, "The record stream"): a UTF-8 byte-order
mark opens a file harmlessly; gzip is read by its magic bytes and written for a `.gz` output; plain text lines are
records with `--lines` or a `.txt` input (`--jsonl`: JSONL whatever the name), and a first line of another format
gets a hint naming it (lookalike_formats); pass-through values come out as they came in (integers of any size digit
for digit); `-o FILE` never replaces an existing file without --force, is never an input, and is written under a
temporary name renamed at the end, also after an error or an interrupt.
"""

from .atomic_files import (
    atomic_path,
    commit,
    sync_directory,
    sync_file,
    temporary_sibling,
    write_bytes_atomic,
    write_json_atomic,
)
from .batches import batched, map_texts, text_jobs
from .fields import TextFields, check_number, check_text, counted_keys, derived_key, group, label
from .json_codec import dumps, json_type, loads, loads_many
from .lines import AUTO_ENCODING, STDIN, LineDecoder, ReadPosition, display_name, text_lines
from .lookalike_formats import embed_first_hint
from .rejects import Rejects
from .stream import PLAIN_TEXT_HINT, RecordReader, RecordSink, RecordSource, Shard, StreamOptions, run_stream
from .vector_fields import SAFE_MAGNITUDES, Dimension, float32_vector, nonzero, unit_scaled, vector

__all__ = [
    "AUTO_ENCODING",
    "PLAIN_TEXT_HINT",
    "SAFE_MAGNITUDES",
    "STDIN",
    "Dimension",
    "LineDecoder",
    "ReadPosition",
    "RecordReader",
    "RecordSink",
    "RecordSource",
    "Rejects",
    "Shard",
    "StreamOptions",
    "TextFields",
    "atomic_path",
    "batched",
    "check_number",
    "check_text",
    "commit",
    "counted_keys",
    "derived_key",
    "display_name",
    "dumps",
    "embed_first_hint",
    "float32_vector",
    "group",
    "json_type",
    "label",
    "loads",
    "loads_many",
    "map_texts",
    "nonzero",
    "run_stream",
    "sync_directory",
    "sync_file",
    "temporary_sibling",
    "text_jobs",
    "text_lines",
    "unit_scaled",
    "vector",
    "write_bytes_atomic",
    "write_json_atomic",
]
