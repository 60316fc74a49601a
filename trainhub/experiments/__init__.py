"""Experiments over jobs: parameter sweeps (space, sampling, early stopping, the controller that
submits their trials) and comparisons of runs."""
