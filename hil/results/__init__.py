"""What a run leaves behind, written in one place: a results folder's `run.json` (what ran,
where, with which tools) and `records.jsonl` (one line per check). The pytest plugin, the
library's Session and `hil check` all write through `writer.ResultsFolder`; `hil report` reads
the folder (hil.report), importing only `files` from here, never the compiler."""
