"""The artifact store's vocabulary: what a recipe leaves beside a .pte for targets and verdicts."""
