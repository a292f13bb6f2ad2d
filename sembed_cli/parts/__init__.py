"""Resumable parts: one corpus embedded as N shares by any engine, each share's files written atomically with a
small manifest last, then read back as one stream in input order.

The engine (a shell loop, a Slurm array, a Ray cluster) only hands out share numbers; these modules own the files
(the pattern of criteo/autofaiss and rom1504's img2dataset):

- `files`: the names in a parts directory, the manifest, planning and committing one part, surveying a directory;
- `reassemble`: the parts of a directory as one record stream in input order (for `sembed index DIR` and
  `sembed parts DIR --cat`);
- `embed_part`: one part embedded, as a typed function (`PartSettings`, whose fields make the manifest's
  settings), what `sembed embed --parts` and every engine call;
- `engines`: running every part in this process or as Ray tasks, each part by the same `embed_part` call.
"""
