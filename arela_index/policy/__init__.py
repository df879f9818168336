"""The query path's decisions in one place: signals, fitted models, one versioned table.

`decisions.QueryPolicy` decides whether a question is about the repository and which retrieved
nodes are relevant, from the named signals of `signals.py` weighed by the logistic models of
`model.py`, fitted by `scripts/fit_policy.py` into `data/policy/table.json`.
"""
