"""Root conftest: only what every suite and test shares. The hil plugin loads via its entry point."""

collect_ignore_glob = ["build/*", ".hil/*", "firmware/*", "bench/*"]
