"""``python -m packhost plan|install|prepare``: see the package's documentation."""

from __future__ import annotations

import asyncio
import json
import sys
import traceback

from packhost import plan as planning
from packhost import runtime


def _request():
    try:
        return json.load(sys.stdin)
    except json.JSONDecodeError as error:
        raise planning.BenchfileError(f"the request on standard input is not JSON: {error}") from None


def _configure(request):
    config = request["config"]
    runtime.configure(
        system=config.get("system"),
        placeholders=request.get("placeholders"),
        variables=request.get("variables"),
        uv=request.get("uv"),
    )
    return config


def _plan(request):
    config = _configure(request)
    return planning.plan(config, request.get("gpus") or [])


def _run_method(name, request):
    config = _configure(request)
    pack = planning.load_package(config)
    pack.phase = name
    asyncio.run(getattr(pack, name)())


def main(argv):
    """Runs one command of the host; the request comes from the file named after the command, or
    from standard input. ``plan`` answers one JSON line per request on standard output (what the
    benchfile prints goes to standard error); ``install`` and ``prepare`` leave standard output to
    the commands they start and say what failed on standard error."""
    if not argv or argv[0] not in ("plan", "install", "prepare") or len(argv) > 2:
        print("usage: python -m packhost plan|install|prepare [REQUEST.json]", file=sys.stderr)
        return 2
    answer_to = sys.stdout
    if argv[0] == "plan":
        sys.stdout = sys.stderr
        try:
            request = _request()
        except planning.BenchfileError as error:
            print(json.dumps({"ok": False, "error": str(error)}), file=answer_to, flush=True)
            return 1
        # A list of requests is answered one JSON line each, in order.
        requests = request if isinstance(request, list) else [request]
        answers = [_answer(lambda r=r: {"ok": True, **_plan(r)}) for r in requests]
        for answer in answers:
            print(json.dumps(answer), file=answer_to, flush=True)
        return 0 if all(a["ok"] for a in answers) else 1
    with open(argv[1]) if len(argv) > 1 else sys.stdin as source:
        request = json.load(source)
    answer = _answer(lambda: _run_method(argv[0], request) or {"ok": True})
    if not answer["ok"]:
        print(f"packhost: {argv[0]} failed: {answer['error']}", file=sys.stderr, flush=True)
    return 0 if answer["ok"] else 1


def _answer(work):
    """``work()``, or the failure it raised as an answer: a benchfile's own exception comes with
    its trace on standard error and the line it was raised from."""
    try:
        return work()
    except (planning.BenchfileError, runtime.CommandFailed) as error:
        return {"ok": False, "error": str(error)}
    except Exception as error:  # a benchfile's own failure: its trace helps its author
        print(traceback.format_exc(), file=sys.stderr, flush=True)
        where = traceback.extract_tb(error.__traceback__)[-1]
        return {
            "ok": False,
            "error": f"{type(error).__name__}: {error} (at {where.filename}:{where.lineno})",
        }


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
