"""Environments shared by more than one suite (Sokoban: triage puzzles and awareness rollouts).

Imports only the core. Private: each suite re-exports what its users need.
"""
