"""The verdict: metrics, tolerances, budgets and the judge (ARCHITECTURE.md, "The verdict")."""
