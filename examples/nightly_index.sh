#!/usr/bin/env bash
# Mirror a folder of documents into a sembed index, night after night (a cron job):
#
#   15 2 * * *  cd /srv/search && MODEL=all-MiniLM-L6-v2 bash nightly_index.sh docs/ docs-index
#
# The first night builds the index; every later night updates it in place: each sentence's id is a hash of its
# text, so only sentences that are new or edited since yesterday are embedded (a line added at the top of a file
# re-embeds that line alone), and --sync removes the sentences of edited and deleted files that are gone. Quiet
# when all is well (-q), so cron mails only a failure; a failed night leaves yesterday's index whole.
#
#   MODEL   the sentence-transformers model of a new index (later nights take the index's own)
#   FORMAT  how to read the folder: prose (split into sentences, the default) or lines (a sentence a line)
set -euo pipefail
DOCS=${1:?usage: nightly_index.sh DOCS_DIR INDEX_DIR}
INDEX=${2:?usage: nightly_index.sh DOCS_DIR INDEX_DIR}
MODEL=${MODEL:-all-MiniLM-L6-v2}
FORMAT=${FORMAT:-prose}
if [ -d "$INDEX" ]; then
  sembed convert -q --from "$FORMAT" "$DOCS" | sembed index -q --update "$INDEX" --sync
else
  sembed convert -q --from "$FORMAT" "$DOCS" | sembed index -q -m "$MODEL" -o "$INDEX"
fi
