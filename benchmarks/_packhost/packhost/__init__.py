"""The pack host: evaluates a benchmark folder's ``benchfile.py`` for the Rust milabench.

``python -m packhost plan`` reads a request (JSON, standard input) naming a benchmark's
resolved configuration and the GPUs, loads the folder's ``benchfile.py`` with this folder's
``milabench`` package, and writes the benchmark's run and prepare plans (JSON, standard
output): one entry per process, with its argv, tag, options, devices and the variables the
benchfile adds. ``python -m packhost install|prepare`` runs the benchfile's own ``install`` or
``prepare`` method, starting its commands as child processes in the host's process group.
"""
