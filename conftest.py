"""Root conftest: only what every suite and test shares (the hil plugin loads by entry point)."""

collect_ignore_glob = ["build/*", ".hil/*", "firmware/*", "bench/*"]
