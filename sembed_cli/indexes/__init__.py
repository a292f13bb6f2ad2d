"""sembed's vector indexes at corpus scale: a FAISS index with its records in SQLite, built from a stream.

An index directory (`sembed index -o DIR`):

    index.faiss      the FAISS index, over unit vectors (inner product = cosine); an update writes
                     index.N.faiss and the store names the current one
    records.sqlite   the rows (SQLite, WAL): each row's number (the FAISS id), the record's id, a hash of its
                     content, its payload (the record without its vectors) and a CRC-32 of them; the store's state
                     (which FAISS file, how many rows); for a graph index, the rows an update removed
    vectors.f16      (lossy types only) the unit vectors, row by row, float16 (or vectors.f32), memory-mapped:
                     search re-ranks FAISS's candidates by exact cosine from them
    sembed.json      what made it: embedding_model, model, dimension, type, factory, count, settings, versions
    ngram-classifier.npz  (an index of names labelled is_poi) the n-gram regression `taste --neighbours` fitted
                     on its records at its first vote, kept for the next (`models/ngram_classifier`)

Modules: `kinds` (which FAISS index, chosen by count; what each costs), `store` (the SQLite rows), `vector_file`
(the re-ranking vectors), `entries` (records read into rows: ids, content hashes, one vector check), `directory`
(a loaded index: search, payloads). One module per verb of `sembed index`, each that verb's whole path: `build`
(-o DIR; also a build from an index's own rows), `update` (--update DIR), `merge` (index merge); what they share
in `staging` (IndexSettings, records read into entries, entries staged into the store and the vector file, the
FAISS adds and writes), `compaction` (an update's rebuild of a graph whose removed rows pass a share) and
`model_choice` (which model embeds the texts, and the identity of the vectors).
Indexes of sembed 0.1 (records.jsonl) still load (`directory`); `index --update` converts them (`legacy`).
"""
