"""The Python worker of ``benchit``: the parts that need live Python objects.

``python -m benchmate.benchit models`` runs a user's script and discovers, exports and times its
models; ``python -m benchmate.benchit ops`` runs operator microbenchmarks. Both speak the JSON-lines
protocol of ``docs/benchit-protocol.md`` through :mod:`benchmate.benchit.protocol`.
"""
