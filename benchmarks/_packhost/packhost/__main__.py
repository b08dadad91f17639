"""``python -m packhost plan|install|prepare``: see the package's documentation."""

from __future__ import annotations

import asyncio
import json
import os
import signal
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


#: The variable that bounds, in seconds, the time ``plan`` spends on one request (none when
#: unset): a benchfile still running then is stopped and answered as having taken too long.
LIMIT_VARIABLE = "PACKHOST_ANSWER_LIMIT"


#: The start of the line ``plan`` writes on standard error before it reads each benchfile.
READING = "packhost: reading the benchfile.py of "


class TookTooLong(BaseException):
    """Raised into a benchfile that ran past the time limit of its request (a
    ``BaseException``, so that the benchfile's own ``except Exception`` does not swallow it)."""


def _answer_channel():
    """The host's own channel for its answers: standard output as it was given, moved to a
    descriptor of its own (not inherited by the commands a benchfile starts). File descriptor 1
    then points at standard error, so nothing a benchfile or its subprocesses print, even with
    ``os.write(1, ...)``, can mix with an answer."""
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return channel


def _within_limit(work):
    """``work()``, stopped with ``TookTooLong`` when it runs past the limit of
    ``LIMIT_VARIABLE``."""
    limit = float(os.environ.get(LIMIT_VARIABLE) or 0)
    if limit <= 0:
        return work()

    def expire(_signal, _frame):
        raise TookTooLong(limit)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        return work()
    except TookTooLong:
        return {
            "ok": False,
            "error": f"its benchfile.py did not finish within {limit:g} s (a loop, or a network "
            "call at its top level or in build_run_plan?) and was stopped",
        }
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def main(argv):
    """Runs one command of the host; the request comes from the file named after the command, or
    from standard input. ``plan`` answers one JSON line per request, as soon as it has it, on
    standard output (what the benchfile prints goes to standard error, see ``_answer_channel``);
    ``install`` and ``prepare`` leave standard output to the commands they start and say what
    failed on standard error."""
    if not argv or argv[0] not in ("plan", "install", "prepare") or len(argv) > 2:
        print("usage: python -m packhost plan|install|prepare [REQUEST.json]", file=sys.stderr)
        return 2
    if argv[0] == "plan":
        answer_to = _answer_channel()
        try:
            request = _request()
        except planning.BenchfileError as error:
            print(json.dumps({"ok": False, "error": str(error)}), file=answer_to, flush=True)
            return 1
        # A list of requests is answered one JSON line each, in order.
        requests = request if isinstance(request, list) else [request]
        ok = True
        for r in requests:
            # Where a benchfile's own output starts, for a host that dies while reading it.
            print(f"{READING}{r.get('config', {}).get('definition')}", file=sys.stderr, flush=True)
            answer = _within_limit(lambda r=r: _answer(lambda: {"ok": True, **_plan(r)}))
            print(json.dumps(answer), file=answer_to, flush=True)
            ok = ok and answer["ok"]
        return 0 if ok else 1
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
    except SystemExit as error:  # sys.exit() in a benchfile ends its reading, not the host
        return {
            "ok": False,
            "error": f"the benchfile called sys.exit({error.code!r}){_where(error)}",
        }
    except Exception as error:  # a benchfile's own failure: its trace helps its author
        print(traceback.format_exc(), file=sys.stderr, flush=True)
        return {"ok": False, "error": f"{type(error).__name__}: {error}{_where(error)}"}


def _where(error):
    """`` (at FILE:LINE)``, the line ``error`` was raised from."""
    where = traceback.extract_tb(error.__traceback__)[-1]
    return f" (at {where.filename}:{where.lineno})"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
