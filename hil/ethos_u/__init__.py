"""The Ethos-U pieces: Vela, the TOSA delegate runner, MAC counts."""
